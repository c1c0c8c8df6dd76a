/**
 * Graceful stop on SIGTERM/SIGINT, as `quire start` and the demo bundle do it: say so, let
 * in-flight requests finish (`close`), and exit 1 if that takes longer than `timeoutSeconds`.
 */
interface ShutdownLog {
  info(fields: object, message: string): void;
  error(fieldsOrMessage: object | string, message?: string): void;
}

export function stopOnSignals(log: ShutdownLog, timeoutSeconds: number, close: () => Promise<void>): void {
  let closing = false;
  const stop = (signal: string) => {
    if (closing) return;
    closing = true;
    log.info({ signal }, 'shutting down: finishing in-flight requests');
    const force = setTimeout(() => {
      log.error('shutdown timed out; exiting');
      process.exit(1);
    }, timeoutSeconds * 1000);
    force.unref();
    close().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}
