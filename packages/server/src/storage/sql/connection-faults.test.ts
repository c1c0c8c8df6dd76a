import { describe, expect, it } from 'vitest';
import { BackendError } from '../errors.js';
import { connectionFault, databaseName, describeTarget, rootMessage } from './connection-faults.js';

const pgError = (code: string, message = 'x') => Object.assign(new Error(message), { code });
const wrapped = (cause: unknown) => new BackendError(`postgresql: ${(cause as Error).message}`, { cause });

describe('connection faults', () => {
  it('tells a database away from a wrong storage_url', () => {
    expect(connectionFault(wrapped(pgError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432')))).toBe(
      'unavailable',
    );
    expect(connectionFault(wrapped(pgError('57P03', 'the database system is starting up')))).toBe('unavailable');
    expect(connectionFault(wrapped(pgError('57P01', 'terminating connection due to administrator command')))).toBe(
      'unavailable',
    );
    expect(connectionFault(wrapped(pgError('53300', 'sorry, too many clients already')))).toBe('unavailable');
    expect(connectionFault(wrapped(new Error('Connection terminated unexpectedly')))).toBe('unavailable');
    expect(connectionFault(wrapped(new Error('timeout exceeded when trying to connect')))).toBe('unavailable');
    // localhost: one attempt per address, gathered in an AggregateError
    expect(connectionFault(wrapped(new AggregateError([pgError('ECONNREFUSED'), pgError('ECONNREFUSED')], '')))).toBe(
      'unavailable',
    );
    expect(connectionFault(wrapped(pgError('3D000', 'database "q" does not exist')))).toBe('no-database');
    expect(connectionFault(wrapped(pgError('28P01', 'password authentication failed for user "q"')))).toBe(
      'credentials',
    );
    expect(connectionFault(wrapped(pgError('42P01', 'relation "objects" does not exist')))).toBeUndefined();
    expect(connectionFault(new TypeError('a bug'))).toBeUndefined();
  });

  it('says what the database said, and where, never the password', () => {
    expect(rootMessage(wrapped(pgError('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.1:5432')))).toBe(
      'connect ECONNREFUSED 10.0.0.1:5432',
    );
    expect(describeTarget('postgresql://quire:hunter2@db.example:6543/prod')).toBe('db.example:6543/prod');
    expect(describeTarget('postgresql://quire@/prod?host=/var/run/postgresql')).toBe('/var/run/postgresql:5432/prod');
    expect(databaseName('postgresql://db.example/my%20db')).toBe('my db');
  });
});
