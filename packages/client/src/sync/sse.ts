/**
 * A server-sent events parser (the WHATWG "event stream" interpretation), pure: text in, events
 * out, no I/O. The change stream is read with fetch (EventSource cannot send Authorization), so
 * the parsing EventSource would do is done here.
 *
 * Lines end with CRLF, LF or CR (a CR at the end of one chunk and an LF at the start of the next
 * are one line end). A blank line dispatches the event gathered since the previous one; `data`
 * lines are joined with LF; `id` sets the last event id (kept across events, ignored when it
 * contains NUL); `retry` with only digits sets the reconnection delay; lines starting with `:`
 * are comments (heartbeats); unknown fields are ignored. An event without data is not dispatched.
 *
 * The server is trusted to send small events, but not to be well-behaved: a line or an event
 * longer than `maxEventChars` throws `SseLimitError` (the caller drops the connection), so a
 * stream that never ends a line cannot grow memory without bound.
 */

export interface SseEvent {
  /** `event` field, `message` when absent. */
  type: string;
  data: string;
  /** The last event id in effect when the event was dispatched (null when none was ever set). */
  lastEventId: string | null;
}

export class SseLimitError extends Error {
  constructor(limit: number) {
    super(`server-sent event longer than ${limit} characters`);
    this.name = 'SseLimitError';
  }
}

/** Default bound of one line and of one event's data: far above a change entry (~200 characters). */
export const DEFAULT_MAX_EVENT_CHARS = 1 << 20;

export class SseParser {
  /** The last `id` received (EventSource's `lastEventId`), sent back as `Last-Event-ID`. */
  lastEventId: string | null = null;
  /** The last valid `retry` received, in ms. */
  retryMs: number | null = null;
  readonly #max: number;
  #line = '';
  #data: string[] = [];
  #dataChars = 0;
  #type = '';
  /** The previous chunk ended with CR: an LF starting this one belongs to that line end. */
  #afterCR = false;

  constructor(maxEventChars = DEFAULT_MAX_EVENT_CHARS) {
    this.#max = maxEventChars;
  }

  /** Parses the next piece of text; returns the events it completes, in order. */
  feed(chunk: string): SseEvent[] {
    const events: SseEvent[] = [];
    if (chunk === '') return events;
    let start = 0;
    if (this.#afterCR && chunk.startsWith('\n')) start = 1;
    this.#afterCR = false;
    for (let i = start; i < chunk.length; i++) {
      const char = chunk.charCodeAt(i);
      if (char !== 10 && char !== 13) continue;
      this.#line += chunk.slice(start, i);
      this.#checkLength(this.#line.length);
      this.#processLine(this.#line, events);
      this.#line = '';
      if (char === 13) {
        if (i + 1 === chunk.length) this.#afterCR = true;
        else if (chunk.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
    }
    this.#line += chunk.slice(start);
    this.#checkLength(this.#line.length);
    return events;
  }

  #checkLength(chars: number): void {
    if (chars > this.#max) throw new SseLimitError(this.#max);
  }

  #processLine(line: string, events: SseEvent[]): void {
    if (line === '') {
      this.#dispatch(events);
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'data':
        this.#data.push(value);
        this.#dataChars += value.length + 1;
        this.#checkLength(this.#dataChars);
        break;
      case 'event':
        this.#type = value;
        break;
      case 'id':
        if (!value.includes('\0')) this.lastEventId = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.retryMs = Number(value);
        break;
      default:
      // Unknown fields are ignored (the specification says so).
    }
  }

  #dispatch(events: SseEvent[]): void {
    if (this.#data.length > 0)
      events.push({ type: this.#type || 'message', data: this.#data.join('\n'), lastEventId: this.lastEventId });
    this.#data = [];
    this.#dataChars = 0;
    this.#type = '';
  }
}
