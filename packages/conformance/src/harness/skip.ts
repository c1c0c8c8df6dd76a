/**
 * The skip signal of the harness, kept free of other imports so that every harness module can
 * throw it (http.ts re-exports it for the suites).
 */

/** Prefix of the message of a `SkipSignal`: the reports count such a test as skipped, not failed. */
export const SKIP_MARKER = '[conformance:skip]';

/** Thrown instead of sending a request the run must not send; the test is reported as skipped. */
export class SkipSignal extends Error {
  constructor(reason: string) {
    super(`${SKIP_MARKER} ${reason}`);
    this.name = 'SkipSignal';
  }
}
