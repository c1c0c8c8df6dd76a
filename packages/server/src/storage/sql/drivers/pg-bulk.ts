import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { toBackendError, type BulkConnection } from './types.js';

/**
 * `SqlDriver.bulkTransaction`: a plain client (no pipelining: pg refuses COPY streams on a pipelined
 * connection; pg-copy-streams, of node-postgres' own ecosystem, speaks COPY's sub-protocol on it).
 * A connection that dies mid-way (the process killed) rolls its transaction back on the server.
 */
export async function bulkTransaction<T>(
  config: pg.ClientConfig,
  fn: (connection: BulkConnection) => Promise<T>,
): Promise<T> {
  const client = new pg.Client(config);
  client.on('error', () => {}); // a dropped connection fails the statement in flight instead
  const fail = (error: unknown) => toBackendError('postgresql', error);
  try {
    await client.connect();
  } catch (error) {
    throw fail(error);
  }
  const connection: BulkConnection = {
    query: async (text, params = []) =>
      (await client.query({ text, values: params as unknown[] }).catch((e) => Promise.reject(fail(e)))).rows,
    exec: async (script) => void (await client.query(script).catch((e) => Promise.reject(fail(e)))),
    copyFrom: (statement, chunks) =>
      new Promise<void>((resolve, reject) => {
        const stream = client.query(copyFrom(statement));
        stream.on('finish', resolve);
        stream.on('error', (error) => reject(fail(error)));
        for (const chunk of chunks) stream.write(chunk);
        stream.end();
      }),
  };
  try {
    await connection.exec('BEGIN');
    const result = await fn(connection);
    await connection.exec('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    await client.end().catch(() => undefined);
  }
}
