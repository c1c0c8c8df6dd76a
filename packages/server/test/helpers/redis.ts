/**
 * The Redis the tests use (`QUIRE_TEST_REDIS_URL`, else the local one) and whether it answers.
 * A file whose Redis tests cannot run prints why and skips them, except under
 * QUIRE_TEST_REQUIRE_REDIS (CI), where an unreachable Redis fails the file.
 */
import { Redis } from 'ioredis';

export const REDIS_URL = process.env.QUIRE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Why the Redis tests of `what` cannot run (printed), or undefined when Redis answers. */
export async function redisUnavailable(what: string): Promise<string | undefined> {
  const client = new Redis(REDIS_URL, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 3000,
  });
  let cause: string | undefined;
  client.on('error', (error: Error) => {
    cause = error.message;
  });
  let reason: string | undefined;
  try {
    await client.connect();
    await client.ping();
  } catch (error) {
    reason = cause ?? (error instanceof Error ? error.message : String(error));
  } finally {
    client.disconnect();
  }
  if (reason === undefined) return undefined;
  if (process.env.QUIRE_TEST_REQUIRE_REDIS)
    throw new Error(`${what}: Redis required but unreachable at ${REDIS_URL}: ${reason}`);
  console.warn(`${what}: skipped, Redis unreachable at ${REDIS_URL} (${reason}). Set QUIRE_TEST_REDIS_URL.`);
  return reason;
}
