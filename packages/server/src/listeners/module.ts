/**
 * Listeners from modules (Kinto's `event_listeners.<name>.use = <python module>`): a listener
 * whose `use` is not a built-in one names a JavaScript module (a path, or a package installed
 * where the server runs) that exports `createListener(options, context)`.
 *
 * As in Kinto, such a listener runs in the request's transaction (protocol-reference §10.4,
 * interface spec "Events" 1): `handle(event)` is awaited before commit, so a slow listener
 * delays the response, and one that throws fails the request with a 500 (an `ApiError` keeps
 * its own status) and rolls it back — a whole batch with it. A listener that must not do that
 * implements `afterCommit(event)` instead: called once the change is committed, its failures
 * only logged.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { FastifyBaseLogger } from 'fastify';
import { ApiError } from '../errors.js';
import type { EventPayload, EventSubscriber, ResourceEvent } from '../events/types.js';
import type { ListenerConfig } from './types.js';

/** What a module listener receives: Kinto's `event.payload` and `event.impacted_objects`, as JSON copies. */
export interface ListenerEvent {
  payload: EventPayload;
  impacted_objects: Array<{ new: Record<string, unknown>; old?: Record<string, unknown> }>;
}

/** What `createListener()` returns: at least one of `handle` and `afterCommit`. */
export interface ModuleListener {
  /** In the transaction: awaited before commit; throwing rolls the request back. */
  handle?(event: ListenerEvent): void | Promise<void>;
  /** After commit: never delays nor fails the response; errors are logged. */
  afterCommit?(event: ListenerEvent): void | Promise<void>;
  /** Server shutdown. */
  close?(): void | Promise<void>;
}

export interface ListenerContext {
  /** The listener's `name` in the settings. */
  name: string;
  /** The server's logger (a child logger naming the listener). */
  log: FastifyBaseLogger | undefined;
}

export type CreateListener = (
  options: Record<string, unknown>,
  context: ListenerContext,
) => ModuleListener | Promise<ModuleListener>;

/**
 * What to import: paths (`./x.mjs`, `/opt/x.js`, `file:` URLs) relative to the working
 * directory; package names resolved from the working directory first (where a deployment
 * installs its own packages), else from the server's own location.
 */
function importTarget(use: string): { specifier: string; path?: string } {
  if (use.startsWith('file:')) return { specifier: use, path: fileURLToPath(use) };
  if (use.startsWith('.') || isAbsolute(use))
    return { specifier: pathToFileURL(resolve(use)).href, path: resolve(use) };
  try {
    return { specifier: pathToFileURL(createRequire(join(process.cwd(), 'package.json')).resolve(use)).href };
  } catch {
    return { specifier: use };
  }
}

/** JSON copy of an event, so that no listener can change what the server or another listener sees. */
function toListenerEvent(event: ResourceEvent): ListenerEvent {
  return structuredClone({
    payload: event.payload,
    impacted_objects: event.impactedObjects,
  }) as unknown as ListenerEvent;
}

/**
 * Imports and builds the listener of `config`. Returns null when `use` is a package name that
 * is not installed (the caller reports an unknown listener); any other problem is `fail`ed.
 */
export async function loadModuleListener(
  config: ListenerConfig,
  log: () => FastifyBaseLogger | undefined,
  fail: (why: string) => never,
): Promise<EventSubscriber | null> {
  const target = importTarget(config.use);
  if (target.path !== undefined && !existsSync(target.path)) return fail(`no module at ${target.path}`);
  let loaded: Record<string, unknown>;
  try {
    loaded = (await import(target.specifier)) as Record<string, unknown>;
  } catch (error) {
    // Only a package name that is not installed is "unknown"; a module that fails to load is reported.
    const code = (error as { code?: string }).code;
    if (
      target.path === undefined &&
      code === 'ERR_MODULE_NOT_FOUND' &&
      (error as Error).message.includes(`'${config.use}'`)
    )
      return null;
    return fail(`cannot load module ${config.use}: ${(error as Error).message}`);
  }
  const create = (loaded.createListener ?? loaded.default) as CreateListener | undefined;
  if (typeof create !== 'function')
    return fail(`module ${config.use} exports no createListener(options, context) function`);
  const childLog = () => log()?.child({ listener: config.name });
  let listener: ModuleListener;
  try {
    listener = await create({ ...config.options }, { name: config.name, log: childLog() });
  } catch (error) {
    return fail(`createListener() of ${config.use} failed: ${(error as Error).message}`);
  }
  const { handle, afterCommit, close } = listener ?? {};
  if (typeof handle !== 'function' && typeof afterCommit !== 'function') {
    return fail(`createListener() of ${config.use} must return an object with handle(event) or afterCommit(event)`);
  }
  const subscriber: EventSubscriber = {
    name: config.name,
    actions: new Set(config.actions),
    resources: config.resources ? new Set(config.resources) : null,
  };
  if (typeof handle === 'function') {
    subscriber.inTransaction = async (events) => {
      for (const event of events) {
        try {
          await handle.call(listener, toListenerEvent(event));
        } catch (error) {
          // A protocol error is the listener's answer to the client; anything else is a 500.
          if (error instanceof ApiError) throw error;
          throw new Error(`event listener "${config.name}" failed`, { cause: error });
        }
      }
    };
  }
  if (typeof afterCommit === 'function') {
    subscriber.afterCommit = (events) => {
      void (async () => {
        for (const event of events) {
          try {
            await afterCommit.call(listener, toListenerEvent(event));
          } catch (error) {
            childLog()?.error({ err: error }, 'event listener failed after commit');
          }
        }
      })();
    };
  }
  if (typeof close === 'function') subscriber.close = async () => close.call(listener);
  return subscriber;
}
