/**
 * `POST /v1/batch` (protocol-reference §8). Sub-requests run in order, inside ONE unit of work:
 * one transaction. Those to the resource engine's endpoints are answered by them directly
 * (batch-direct.ts); the others go through the same routes as any request
 * (http/internal-requests.ts). 4xx answers are just entries; a 5xx — or a 409 integrity
 * conflict — rolls the whole batch back and becomes the answer, so a
 * batch is never half-written. (Kinto keeps going after a 409 with an aborted transaction;
 * clients cannot rely on that state, so we refuse it whole.)
 */
import { performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Settings } from '../config.js';
import { ApiError, ERRNO } from '../errors.js';
import { TURN_MS, type Turn, turnOf } from '../engine/loop-turns.js';
import { registerMethods } from '../engine/routes.js';
import { headersTooLarge } from '../http/client-errors.js';
import { sessionOwner } from '../http/session-budget.js';
import { UnitOfWork } from '../unit-of-work.js';
import { answerDirectly } from './batch-direct.js';
import { entryPath, type SubRequest, type SubResponse, subResponseError } from './batch-entry.js';
import { BatchAnswer } from './batch-answer.js';
import { BATCH_PATH, parseBatch, recursiveBatch, routedPath } from './batch-parse.js';
import { answerByRouter, inheritedHeaders, withHostOf } from './batch-routed.js';

export { inheritedHeaders };
export { routedPath };

export function registerBatch(app: FastifyInstance): void {
  const { settings, storage, events } = app.services;
  const limits = {
    maxRequests: settings.batch_max_requests,
    maxBodyBytes: settings.max_body_bytes,
    json: { maxDepth: settings.max_json_depth, maxKeys: settings.max_json_keys },
  };

  /** One sub-request's entry: by the engine's endpoint in-process, else by the router. */
  async function execute(request: FastifyRequest, sub: SubRequest, work: UnitOfWork): Promise<SubResponse> {
    const headers: Record<string, string> = { ...inheritedHeaders(request) };
    for (const [name, value] of Object.entries(sub.headers)) headers[name.toLowerCase()] = value;
    withHostOf(request, headers); // a sub-request's own Host would reach its URLs
    if (sub.body !== undefined) headers['content-type'] = 'application/json; charset=utf-8';
    // What Node's HTTP parser refuses of a request from the network (client-errors.ts).
    if (requestLineAndHeadersBytes(sub, headers) > settings.max_header_bytes) {
      const error = headersTooLarge(settings);
      return { status: error.status, path: entryPath(sub.path), headers: {}, bodyText: JSON.stringify(error.toBody()) };
    }
    return (await answerDirectly(app, request, work, sub, headers)) ?? answerByRouter(app, request, work, sub, headers);
  }

  registerMethods(app, BATCH_PATH, {
    POST: async (request: FastifyRequest, reply: FastifyReply) => {
      // Whatever path led a sub-request here, a batch never runs inside a batch: it would wait
      // on its own transaction (the embedded store) or take one more connection per level.
      if (request.work.batch) throw recursiveBatch();
      const requests = parseBatch(request.body, limits);
      const readOnly = requests.every(onlyReads);
      const answer = new BatchAnswer(reply, readOnly, settings.batch_max_response_bytes);
      const owner = sessionOwner(request.identity?.userId, request.ip);
      const deadline = new BatchDeadline(reply, settings, turnOf(owner));
      try {
        // One unit of work for the whole batch: one transaction (plain reads for a batch that
        // only reads: nothing held while its answer streams), and one request for events
        // (§10.4), grouped across sub-requests, delivered to in-transaction listeners before the
        // batch commits, to the others after.
        // Its statements are cancelled when the batch must stop (deadline.signal) and share the
        // pool as the caller's.
        const work = new UnitOfWork(storage, events, true, () => ({ signal: deadline.signal, owner }));
        await work.run(readOnly ? 'read' : 'write', async () => {
          for (const sub of requests) {
            await deadline.check();
            const result = await execute(request, sub, work);
            if (result.status >= 500 || result.status === 409) throw subResponseError(result);
            await answer.add(result);
          }
          await deadline.check(); // nothing is committed for a client gone or past the budget
        });
        return answer.end() ?? reply;
      } catch (error) {
        // A statement cancelled because the batch had to stop: the reason it stopped is the answer.
        if (!answer.streaming) throw deadline.stopped() ?? error;
        // Too late for another status: the connection is cut, the failure logged.
        request.log.error({ err: error }, 'batch failed while its answer was streamed');
        answer.abort(error);
        return reply;
      } finally {
        deadline.clear();
      }
    },
  });
}

/**
 * A sub-request that only reads, through the engine or another route: GET and HEAD, except of
 * the personal bucket (`/buckets/default`), whose reads create it.
 */
function onlyReads(sub: SubRequest): boolean {
  return (sub.method === 'GET' || sub.method === 'HEAD') && !/^\/v1\/buckets\/default(\/|$)/.test(routedPath(sub.path));
}

/** The size Node's HTTP parser counts against `max_header_bytes`: the request line and the headers. */
function requestLineAndHeadersBytes(sub: SubRequest, headers: Record<string, string>): number {
  let bytes = sub.method.length + sub.path.length + 12;
  for (const [name, value] of Object.entries(headers)) bytes += name.length + value.length + 4;
  return bytes;
}

/**
 * When a batch must stop: its client went away (nobody would read the answer, and its locks
 * would be held for nothing) or it ran past `batch_timeout_seconds`. Checked before each
 * sub-request and before commit; throwing rolls the transaction back.
 */
class BatchDeadline {
  readonly #expiresAt: number;
  readonly #seconds: number;
  readonly #retryAfter: number;
  readonly #reply: FastifyReply;
  #clientGone = false;
  #lastYield = performance.now();
  readonly #turn: Turn;
  /** Aborted when the batch must stop: the store cancels its statements in flight. */
  readonly #stopping = new AbortController();
  readonly #timer: NodeJS.Timeout;
  readonly #onClose = () => {
    if (this.#reply.raw.writableFinished) return;
    this.#clientGone = true;
    this.#stopping.abort(new Error('the client went away'));
  };

  constructor(reply: FastifyReply, settings: Settings, turn: Turn) {
    const seconds = settings.batch_timeout_seconds;
    this.#reply = reply;
    this.#seconds = seconds;
    this.#retryAfter = settings.retry_after_seconds;
    this.#turn = turn;
    this.#expiresAt = performance.now() + seconds * 1000;
    reply.raw.on('close', this.#onClose);
    this.#timer = setTimeout(() => this.#stopping.abort(new Error('batch_timeout_seconds')), seconds * 1000);
    this.#timer.unref();
  }

  get signal(): AbortSignal {
    return this.#stopping.signal;
  }

  /** Why the batch had to stop (its answer), or null while it may go on. */
  stopped(): ApiError | null {
    if (this.#clientGone) {
      // Never sent: there is nobody to send it to. Status 499 as proxies log a client gone.
      return new ApiError(499, ERRNO.UNDEFINED, {
        message: 'The client closed the connection: the batch was rolled back.',
      });
    }
    if (performance.now() > this.#expiresAt) {
      return new ApiError(503, ERRNO.BACKEND, {
        message:
          `The batch ran longer than batch_timeout_seconds (${this.#seconds} s) and was rolled back: ` +
          'send fewer requests per batch.',
        headers: { 'Retry-After': String(this.#retryAfter) },
      });
    }
    return null;
  }

  /**
   * Throws when the batch must stop. An in-process store answers without ever leaving the
   * microtask queue, so the batch first waits for its owner's next turn of the event loop now
   * and then (engine/loop-turns.ts): that is how a closed connection is noticed, and how other
   * requests keep being served meanwhile.
   */
  async check(): Promise<void> {
    if (performance.now() - this.#lastYield > TURN_MS) {
      await this.#turn();
      this.#lastYield = performance.now();
    }
    const stopped = this.stopped();
    if (stopped) throw stopped;
  }

  clear(): void {
    clearTimeout(this.#timer);
    this.#reply.raw.off('close', this.#onClose);
  }
}
