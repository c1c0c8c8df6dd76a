import { describe, expect, it } from 'vitest';
import { BackoffError, NetworkError, PreconditionFailedError, QuireError, ServerError } from './errors.js';

describe('errors', () => {
  it('carry stable codes and a class hierarchy', () => {
    const error = new PreconditionFailedError(
      { errno: 114, message: 'Resource was modified meanwhile', details: { existing: { id: 'a', last_modified: 1 } } },
      new Headers(),
    );
    expect(error).toBeInstanceOf(PreconditionFailedError);
    expect(error).toBeInstanceOf(ServerError);
    expect(error).toBeInstanceOf(QuireError);
    expect(error).not.toBeInstanceOf(NetworkError);
    expect(error).toMatchObject({ code: 'QUIRE_ERR_SERVER_PRECONDITION', status: 412, errno: 114 });
    expect(error.existing).toEqual({ id: 'a', last_modified: 1 });
    // Named by a static field, not the class name (which a minifier renames).
    expect([error.name, new NetworkError('x').name, new QuireError('QUIRE_ERR_X', 'x').name]).toEqual([
      'PreconditionFailedError',
      'NetworkError',
      'QuireError',
    ]);
  });

  it('instanceof works for an error from another copy of the SDK (same Symbol.for brand)', () => {
    const foreign = {
      [Symbol.for('quire.error.QUIRE_ERR')]: true,
      [Symbol.for('quire.error.QUIRE_ERR_TRANSPORT_BACKOFF')]: true,
    };
    expect(foreign).toBeInstanceOf(BackoffError);
    expect(foreign).toBeInstanceOf(QuireError);
    expect(foreign).not.toBeInstanceOf(NetworkError);
  });
});
