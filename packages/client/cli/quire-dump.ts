#!/usr/bin/env node
/**
 * quire-dump: writes a collection's records as a dump (src/dump/dump.ts) for `collection.loadDump()`.
 * A program on the SDK's public surface, outside the library's layers.
 *
 *   quire-dump --remote https://quire.example/v1 --bucket app --collection articles --user ada \
 *     [--out articles.json]
 *
 * The password comes from QUIRE_PASSWORD (or a bearer token from QUIRE_TOKEN): secrets stay out of
 * the command line and the shell history. Without --out, the dump goes to standard output.
 */
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { type Auth, createClient } from '../src/index.js';

const USAGE = [
  'usage: quire-dump --remote <url with /v1> --bucket <id> --collection <id>',
  '         [--user <name>] [--out <file>] [--page-size <n>]',
  '(password: QUIRE_PASSWORD; bearer token: QUIRE_TOKEN)',
].join('\n');

async function main(): Promise<number> {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      options: {
        remote: { type: 'string' },
        bucket: { type: 'string' },
        collection: { type: 'string' },
        user: { type: 'string' },
        out: { type: 'string' },
        'page-size': { type: 'string' },
        help: { type: 'boolean' },
      },
    }));
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const { remote, bucket, collection } = values as Record<string, string | undefined>;
  if (!remote || !bucket || !collection) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  let auth: Auth | undefined;
  if (process.env.QUIRE_TOKEN) auth = { type: 'bearer', token: process.env.QUIRE_TOKEN };
  else if (typeof values.user === 'string')
    auth = { type: 'basic', username: values.user, password: process.env.QUIRE_PASSWORD ?? '' };
  const pageSize = typeof values['page-size'] === 'string' ? Number(values['page-size']) : undefined;
  const client = createClient({ remote, ...(auth ? { auth } : {}), timeoutMs: 120_000 });
  try {
    const dump = await client.exportDump(bucket, collection, {
      ...(pageSize ? { pageSize } : {}),
      onProgress: (received) => process.stderr.write(`\r${received} records`),
    });
    process.stderr.write(`\r${dump.data.length} records, timestamp ${dump.timestamp}\n`);
    const text = JSON.stringify(dump);
    if (typeof values.out === 'string') await writeFile(values.out, text);
    else process.stdout.write(text);
    return 0;
  } catch (error) {
    process.stderr.write(`quire-dump: ${(error as Error).message}\n`);
    return 1;
  } finally {
    await client.close();
  }
}

process.exitCode = await main();
