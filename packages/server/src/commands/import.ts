/**
 * `quire import`: the CLI side of transfer/import.ts — the input (a file or standard input),
 * the progress line, what earlier imports left unfinished, and signals: SIGINT or SIGTERM
 * interrupts the import, which rolls back (the store as it was) and exits 130 / 143; a second
 * one exits at once (the store still as it was: nothing is committed before the end).
 */
import { createReadStream, fstatSync, statSync } from 'node:fs';
import { constants } from 'node:os';
import type { Readable } from 'node:stream';
import { EXIT } from '../exit-codes.js';
import type { Settings } from '../config.js';
import type { Storage } from '../storage/types.js';
import { ImportError, ImportInterrupted, importStore } from '../transfer/import.js';
import { describeUnfinished } from '../transfer/refusals.js';
import { importLimits } from '../transfer/validate.js';
import { progress } from './progress.js';

/** The input's size when it is a file (standard input redirected from one too), for the ETA. */
function sizeOf(path: string | undefined): number | undefined {
  try {
    const info = path ? statSync(path) : fstatSync(0);
    return info.isFile() ? info.size : undefined;
  } catch {
    return undefined;
  }
}

/** SIGINT/SIGTERM abort the import (and stop reading its input); the handlers go when it ends. */
function interruptOn(controller: AbortController, input: Readable): () => void {
  const handler = (signal: NodeJS.Signals) => {
    if (controller.signal.aborted) process.exit(128 + constants.signals[signal]);
    console.error(`\nquire import: ${signal}: interrupting, nothing of this import will be kept…`);
    const reason = `interrupted by ${signal}`;
    controller.abort(reason);
    input.destroy(new ImportInterrupted(reason));
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return () => {
    process.off('SIGINT', handler);
    process.off('SIGTERM', handler);
  };
}

export async function runImport(
  storage: Storage,
  settings: Settings,
  options: { input: string | undefined; replace: boolean; batchSize: number },
): Promise<number> {
  const input = options.input ? createReadStream(options.input) : process.stdin;
  const bar = progress('imported', sizeOf(options.input));
  const controller = new AbortController();
  const stop = interruptOn(controller, input);
  try {
    const summary = await importStore(storage, input, {
      batchSize: options.batchSize,
      replace: options.replace,
      limits: importLimits(settings),
      sortMemoryMb: settings.storage_import_sort_memory_mb,
      attachmentFolder: settings.attachment_folder,
      inputName: options.input ?? 'standard input',
      signal: controller.signal,
      onProgress: (objects, bytes) => bar.update(objects, bytes),
      onPhase: (phase) => bar.phase(phase),
      onUnfinished: (runs) => {
        for (const run of runs) console.error(`quire import: ${describeUnfinished(run)}`);
      },
    });
    bar.done(summary.objects);
    if (summary.replaced > 0)
      console.error(`quire import: ${summary.replaced} lines replaced an earlier line for the same object (--replace)`);
    return 0;
  } catch (error) {
    if (error instanceof ImportInterrupted || controller.signal.aborted) {
      const reason = String(controller.signal.reason ?? error);
      console.error(`quire import: ${reason}: nothing was imported, the store is as it was before`);
      const signal = /SIG[A-Z]+/.exec(reason)?.[0] as NodeJS.Signals | undefined;
      return signal ? 128 + constants.signals[signal] : EXIT.FAILURE;
    }
    if (!(error instanceof ImportError)) throw error;
    console.error(`quire import: ${error.message}`);
    return EXIT.FAILURE;
  } finally {
    stop();
  }
}
