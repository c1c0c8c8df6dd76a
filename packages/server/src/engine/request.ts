/**
 * A request as the resource engine sees it: who calls, what they sent, where their answer's
 * URLs point, and the unit of work it runs in. The HTTP route handler (routes.ts) and every
 * caller in process (in-process-call.ts: the batch, attachments, the default bucket) build it
 * alike, so the endpoints, the model and the definitions' hooks never see Fastify: one shape for
 * every caller (a single class keeps the functions it goes through monomorphic).
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Identity } from '../auth/policy.js';
import type { Settings } from '../config.js';
import { sessionOwner } from '../http/session-budget.js';
import type { UnitOfWork } from '../unit-of-work.js';
import { type Turn, turnOf } from './loop-turns.js';
import type { RequestQuery } from './request-input.js';

/** A route's parameters: `bucket_id`, `collection_id`… (`<resource>_id`), decoded. */
export type RouteParams = Record<string, string>;

/** The request headers the engine reads (lower-case names, as Node gives them). */
export interface EngineHeaders {
  readonly 'if-match'?: string;
  readonly 'if-none-match'?: string;
  /** PATCH: `full`, `light` or `diff` (§4.5). */
  readonly 'response-behavior'?: string;
  /** PATCH: which of the three patch types (§4.4). */
  readonly 'content-type'?: string;
  /** Accounts: a temporary password may be used to set a new one. */
  readonly authorization?: string;
}

export interface EngineRequestInit {
  method: string;
  /** The path as sent, still percent-encoded, with its `/v1` prefix and without the query. */
  path: string;
  params: RouteParams;
  query: RequestQuery;
  headers: EngineHeaders;
  body: unknown;
  identity: Identity;
  settings: Settings;
  work: UnitOfWork;
  id: string;
  log: FastifyBaseLogger;
  /** The client's address (a batch's sub-request: the batch's client). */
  ip: string;
  /** `scheme://host` of the absolute URLs answered (Next-Page), computed when first asked. */
  origin: () => string;
}

/** A call of an endpoint in process, as a request would send it (in-process-call.ts). */
export interface EngineCall {
  method: string;
  /** The path as a request would send it: percent-encoded, with its `/v1` prefix. */
  path: string;
  /** The query string, without `?`. */
  query: string;
  /** The headers the engine reads are taken from these (preconditions, Content-Type…). */
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

export class EngineRequest {
  readonly method: string;
  readonly path: string;
  readonly params: RouteParams;
  readonly query: RequestQuery;
  readonly headers: EngineHeaders;
  readonly body: unknown;
  readonly identity: Identity;
  readonly settings: Settings;
  readonly work: UnitOfWork;
  readonly id: string;
  readonly log: FastifyBaseLogger;
  readonly ip: string;
  #origin: string | (() => string);
  #turn: Turn | null = null;

  constructor(init: EngineRequestInit) {
    this.method = init.method;
    this.path = init.path;
    this.params = init.params;
    this.query = init.query;
    this.headers = init.headers;
    this.body = init.body;
    this.identity = init.identity;
    this.settings = init.settings;
    this.work = init.work;
    this.id = init.id;
    this.log = init.log;
    this.ip = init.ip;
    this.#origin = init.origin;
  }

  /** The path and query string as sent (an event's `uri` is read from it). */
  get url(): string {
    return this.query.text === '' ? this.path : `${this.path}?${this.query.text}`;
  }

  /** `scheme://host` of the absolute URLs of the answer (http/base-url.ts decides it). */
  get origin(): string {
    if (typeof this.#origin === 'function') this.#origin = this.#origin();
    return this.#origin;
  }

  /** What each slice of the request's work on the event loop awaits: its owner's turn (loop-turns.ts). */
  get turn(): Turn {
    this.#turn ??= turnOf(sessionOwner(this.identity.userId, this.ip));
    return this.#turn;
  }

  /**
   * Aborted when the work should stop (its client went away, its budget ran out), when the unit
   * of work carries such a signal; undefined otherwise.
   */
  get signal(): AbortSignal | undefined {
    return (this.work as { readonly signal?: AbortSignal }).signal;
  }
}

/** The engine's headers out of a header record (a header sent twice: its values joined, as Node joins them). */
export function engineHeaders(headers: Record<string, string | string[] | undefined>): EngineHeaders {
  const pick = (name: string): string | undefined => {
    const value = headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  };
  const result: Record<string, string> = {};
  for (const name of ['if-match', 'if-none-match', 'response-behavior', 'content-type', 'authorization']) {
    const value = pick(name);
    if (value !== undefined) result[name] = value;
  }
  return result;
}
