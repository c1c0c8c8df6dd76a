/**
 * Configured event listeners (setting `event_listeners`, protocol-reference §10.4): a JSON list
 * of `{name, use, actions, resources, ...own keys}`, as Kinto's `<app>.event_listeners.<name>.*`.
 * `actions` defaults to create/update/delete (add `read` explicitly); `resources` to all.
 */
import type { FastifyBaseLogger } from 'fastify';
import { ConfigError } from '../config.js';
import { ACTIONS, type Action, type EventSubscriber } from '../events/types.js';
import { loadModuleListener } from './module.js';
import { REDIS_LISTENER_KEYS, RedisQueueListener, type RedisListenerOptions, redisListenerOptions } from './redis.js';
import type { ListenerConfig } from './types.js';

/** Accepted `use` values of the Redis queue listener: ours and Kinto's module names. */
const REDIS_USES = new Set(['redis', 'kinto_redis.listeners', 'kinto.core.listeners.redis']);
const COMMON_KEYS = new Set(['name', 'use', 'actions', 'resources']);
const DEFAULT_ACTIONS: Action[] = ['create', 'update', 'delete'];

function stringList(value: unknown, fail: (why: string) => never, key: string): string[] {
  // A space-separated string is accepted too, as in Kinto's ini files.
  if (typeof value === 'string') return value.split(/[\s,]+/).filter(Boolean);
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string'))
    fail(`${key} must be a list of strings`);
  return value as string[];
}

function parseListenerConfigs(raw: unknown): ListenerConfig[] {
  if (!Array.isArray(raw)) throw new ConfigError('Invalid setting event_listeners: expected a JSON array of listeners');
  const names = new Set<string>();
  return raw.map((entry: unknown, index) => {
    const where = `event_listeners[${index}]`;
    const fail = (why: string): never => {
      throw new ConfigError(`Invalid setting ${where}: ${why}`);
    };
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return fail('expected an object');
    const object = entry as Record<string, unknown>;
    const { name, use } = object;
    if (typeof name !== 'string' || name === '') return fail('name must be a non-empty string');
    if (names.has(name)) fail(`duplicate listener name "${name}"`);
    names.add(name);
    if (typeof use !== 'string' || use === '') return fail('use must be a non-empty string');
    const actions = object.actions === undefined ? DEFAULT_ACTIONS : stringList(object.actions, fail, 'actions');
    for (const action of actions)
      if (!(ACTIONS as string[]).includes(action)) fail(`unknown action "${action}" (one of ${ACTIONS.join(', ')})`);
    const resources = object.resources === undefined ? null : stringList(object.resources, fail, 'resources');
    const options: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(object)) if (!COMMON_KEYS.has(key)) options[key] = value;
    return { name, use, actions: actions as Action[], resources, options };
  });
}

/**
 * Builds the configured listeners: the built-in Redis queue, or a module's (listeners/module.ts),
 * in the settings' order. Anything wrong fails at boot, before a built-in listener connects.
 */
export async function createListeners(
  raw: unknown,
  log: () => FastifyBaseLogger | undefined,
): Promise<EventSubscriber[]> {
  const configs = parseListenerConfigs(raw);
  const failFor =
    (config: ListenerConfig) =>
    (why: string): never => {
      throw new ConfigError(`Invalid setting event_listeners (listener "${config.name}"): ${why}`);
    };
  const redisOptions = new Map<ListenerConfig, RedisListenerOptions>();
  for (const config of configs) {
    if (!REDIS_USES.has(config.use)) continue;
    const unknown = Object.keys(config.options).filter((key) => !REDIS_LISTENER_KEYS.includes(key));
    if (unknown.length)
      failFor(config)(`unknown key(s) ${unknown.join(', ')} (known: ${REDIS_LISTENER_KEYS.join(', ')})`);
    redisOptions.set(config, redisListenerOptions(config, failFor(config)));
  }
  const fromModules = new Map<ListenerConfig, EventSubscriber>();
  try {
    for (const config of configs) {
      if (redisOptions.has(config)) continue;
      const listener = await loadModuleListener(config, log, failFor(config));
      if (!listener)
        failFor(config)(
          `unknown listener "${config.use}": neither a built-in listener (${[...REDIS_USES].join(', ')}) nor ` +
            'an installed module',
        );
      fromModules.set(config, listener as EventSubscriber);
    }
  } catch (error) {
    await Promise.allSettled([...fromModules.values()].map((listener) => listener.close?.()));
    throw error;
  }
  return configs.map(
    (config) =>
      fromModules.get(config) ?? new RedisQueueListener(config, redisOptions.get(config) as RedisListenerOptions, log),
  );
}
