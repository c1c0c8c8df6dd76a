/**
 * Requests this process makes to itself, through the router and every hook as if they came
 * from the network: a batch's sub-requests to routes outside the engine (views/batch-routed.ts).
 * They run in the unit of work they are given (a batch's transaction), which the dispatcher
 * hands to the request object itself under a private symbol: no header, no registry, nothing
 * a network request could carry. light-my-request is what Fastify's own `inject` uses; it is
 * called here with `app.routing` so that the request object can be reached before routing.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import inject, { type Response } from 'light-my-request';
import type { UnitOfWork } from '../unit-of-work.js';

const UNIT_OF_WORK = Symbol('quire.unitOfWork');

type Dispatched = IncomingMessage & { [UNIT_OF_WORK]?: UnitOfWork };

export interface InternalRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
  /** The address of the client on whose behalf it runs (login limits count against it). */
  remoteAddress: string;
}

export function dispatchInternal(app: FastifyInstance, work: UnitOfWork, request: InternalRequest): Promise<Response> {
  const dispatch = (raw: IncomingMessage, response: Parameters<FastifyInstance['routing']>[1]) => {
    (raw as Dispatched)[UNIT_OF_WORK] = work;
    app.routing(raw, response);
  };
  // The options are ours and well-formed: skip light-my-request's per-call schema validation.
  return inject(dispatch, {
    ...(request as Omit<InternalRequest, 'method'>),
    method: request.method as never,
    validate: false,
  });
}

/** The unit of work an internal request was dispatched in; undefined for a request from the network. */
export function dispatchedWork(raw: IncomingMessage): UnitOfWork | undefined {
  return (raw as Dispatched)[UNIT_OF_WORK];
}
