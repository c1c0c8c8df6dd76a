/**
 * The input a request carries in its URL, read once for every way in (HTTP and a batch's
 * sub-requests alike): the query string's parameters, and the listing they describe (§7).
 */
import { type ListQuery, parseListQuery } from './querystring.js';

/** A request's query string: its parameters in order, and the listing they ask for, parsed when first asked. */
export class RequestQuery {
  #listing: ListQuery | undefined;

  constructor(
    /** The query string as sent (without `?`). */
    readonly text: string,
    readonly params: ReadonlyArray<readonly [string, string]>,
  ) {}

  /** The listing parameters (§7), parsed on first use: a bad value is a 400 (errno 107). */
  get listing(): ListQuery {
    this.#listing ??= parseListQuery(this.params);
    return this.#listing;
  }

  /** The first value of `name`, or null. */
  get(name: string): string | null {
    for (const [key, value] of this.params) if (key === name) return value;
    return null;
  }
}

/** The parameters of a query string (without `?`). */
export function readQuery(text: string): RequestQuery {
  return text === '' ? new RequestQuery('', []) : new RequestQuery(text, [...new URLSearchParams(text)]);
}
