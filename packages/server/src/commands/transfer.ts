/**
 * `quire export [--output file]` and `quire import [--input file] [--replace]`: the CLI side of
 * src/transfer (options, files or stdio, a progress line on stderr when it is a terminal).
 */
import { createWriteStream } from 'node:fs';
import { finished } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { loadSettings } from '../config.js';
import { EXIT } from '../exit-codes.js';
import { HistoryDrainer } from '../history/drainer.js';
import { resolveSecrets } from '../secrets.js';
import { connectStorage } from '../storage/factory.js';
import { exportStore } from '../transfer/export.js';
import { runImport } from './import.js';
import { progress } from './progress.js';

export const TRANSFER_USAGE = `  quire export [--output file.ndjson] [--page-size 1000]
      write every bucket and account (objects, tombstones, permissions, timestamps, history)
      as NDJSON to the file or to standard output
  quire import [--input file.ndjson] [--batch-size 5000] [--replace]
      load an export into the configured store (migrating it first), keeping ids and
      last_modified, in one transaction: all or nothing, also when interrupted or killed;
      every line is checked as the API would (ids, parents, resource types, sizes), and the
      first refusal names its line; a store that holds data, or an object given twice, is
      refused unless --replace (which empties the store first, and lets the later line for an
      object win); --batch-size lines go to the store at a time`;

function positiveInteger(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1)
    throw new TypeError(`--${name} must be a whole number ≥ 1, got ${JSON.stringify(text)}`);
  return value;
}

/** The options of `quire export|import`; null when they are wrong (the error and the usage printed). */
function transferOptions(command: 'export' | 'import', args: string[]) {
  try {
    const { values } = parseArgs({
      args,
      options: {
        config: { type: 'string' },
        output: { type: 'string', short: 'o' },
        input: { type: 'string', short: 'i' },
        replace: { type: 'boolean' },
        'page-size': { type: 'string' },
        'batch-size': { type: 'string' },
      },
    });
    if (command === 'export' && (values.input || values.replace || values['batch-size']))
      throw new TypeError('quire export takes --output and --page-size');
    if (command === 'import' && (values.output || values['page-size']))
      throw new TypeError('quire import takes --input, --batch-size and --replace');
    return {
      values,
      pageSize: positiveInteger('page-size', values['page-size'], 1000),
      batchSize: positiveInteger('batch-size', values['batch-size'], 5000),
    };
  } catch (error) {
    console.error(`quire ${command}: ${(error as Error).message}\n\n${TRANSFER_USAGE}`);
    return null;
  }
}

/** Runs `quire export|import`; `onStorageUrl` lets the CLI explain database failures. Returns the exit code. */
export async function runTransferCommand(
  command: 'export' | 'import',
  args: string[],
  onStorageUrl: (url: string | null) => void,
): Promise<number> {
  const options = transferOptions(command, args);
  if (!options) return EXIT.USAGE;
  const { values, batchSize } = options;
  const settings = resolveSecrets(loadSettings({ configFile: values.config ?? process.env.QUIRE_CONFIG ?? null }));
  onStorageUrl(settings.storage_url);
  // Pages never larger than the store allows (storage_max_fetch_size).
  const pageSize = Math.min(options.pageSize, settings.storage_max_fetch_size);

  if (command === 'export') {
    const storage = await connectStorage(settings, { keepIndexes: false });
    // History entries a stopped server left in the outbox are moved into the history first, as
    // its next start would do: otherwise the export would miss them.
    const drainer = new HistoryDrainer(storage, {
      trim: null,
      batchSize: settings.history_drain_batch_size,
      delayMs: 0,
      sweepIntervalMs: 3_600_000,
      log: () => undefined,
    });
    await drainer.drainAll().finally(() => drainer.close());
    const out = values.output ? createWriteStream(values.output) : process.stdout;
    const bar = progress('exported');
    try {
      const count = await exportStore(storage, out, { pageSize, onProgress: (n) => bar.update(n) });
      bar.done(count);
      if (out !== process.stdout) {
        out.end();
        await finished(out);
      }
    } finally {
      await storage.close();
    }
    return 0;
  }

  const storage = await connectStorage(settings, { migrate: true, keepIndexes: false });
  try {
    return await runImport(storage, settings, { input: values.input, replace: values.replace === true, batchSize });
  } finally {
    await storage.close();
  }
}
