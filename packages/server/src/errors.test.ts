import { describe, expect, it } from 'vitest';
import { ApiError, ERRNO } from './errors.js';

describe('ApiError', () => {
  it('is recognised across copies of the package (a listener module may bundle its own)', () => {
    // What `new ApiError()` of another copy of errors.ts looks like: another class, same brand.
    const brand: unique symbol = Symbol.for('quire.ApiError') as never;
    class OtherCopyApiError extends Error {
      readonly [brand] = true;
    }
    expect(new OtherCopyApiError('x')).toBeInstanceOf(ApiError);
    expect(new ApiError(403, ERRNO.FORBIDDEN)).toBeInstanceOf(ApiError);
    expect(new Error('x')).not.toBeInstanceOf(ApiError);
    expect(Object.assign(new Error('x'), { status: 403 })).not.toBeInstanceOf(ApiError);
    expect(null).not.toBeInstanceOf(ApiError);
  });
});
