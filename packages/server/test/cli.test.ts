/**
 * The `quire` command as an operator runs it: start on the embedded store, graceful SIGTERM,
 * data kept across a restart, clear failures for bad settings.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useCli } from './helpers/cli.js';

const auth = `Basic ${Buffer.from('alice:secret').toString('base64')}`;
const run = useCli();

describe('quire command', () => {
  it('keeps data across a restart and finishes in-flight requests on SIGTERM', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'quire-cli-'));
    const env = { QUIRE_DATA_DIR: dataDir, PORT: '0' };

    const first = run(['start'], { ...env, QUIRE_LOG_LEVEL: 'info' }); // logs 'shutting down'
    const url = await first.listening;
    const put = await fetch(`${url}buckets/kept`, { method: 'PUT', headers: { Authorization: auth } });
    expect(put.status).toBe(201);
    // A request in flight when SIGTERM arrives still gets its answer. In flight for sure: the
    // server has taken its headers (it answered `100 Continue`) and waits for its body, which
    // is sent once the server says it is shutting down. (A request merely sent a few ms before
    // the signal may reach a closing server, which rightly answers 503.)
    const inFlight = new Promise<number>((resolve, reject) => {
      const body = '{}';
      const req = http.request(`${url}buckets/kept/collections/c`, {
        method: 'PUT',
        headers: {
          Authorization: auth,
          'Content-Type': 'application/json',
          'Content-Length': body.length,
          Expect: '100-continue',
        },
      });
      req.on('continue', () => {
        first.child.kill('SIGTERM');
        const sendBody = () => (/shutting down/.test(first.output()) ? req.end(body) : setTimeout(sendBody, 10));
        sendBody();
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.flushHeaders();
    });
    expect(await inFlight).toBe(201);
    expect(await first.exited).toBe(0);

    const second = run(['start'], env);
    const url2 = await second.listening;
    const get = await fetch(`${url2}buckets/kept/collections/c`, { headers: { Authorization: auth } });
    expect(get.status).toBe(200);
    expect(((await get.json()) as { data: { id: string } }).data.id).toBe('c');
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  }, 90_000);

  it('stops with a clear message on a bad setting', async () => {
    const bad = run(['start'], { QUIRE_PORT: 'eighty', QUIRE_DATA_DIR: mkdtempSync(join(tmpdir(), 'quire-cli-')) });
    expect(await bad.exited).toBe(78);
    expect(bad.output()).toMatch(/Invalid setting port/);
  }, 30_000);

  it('loads a listener module named by a path relative to the working directory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'quire-cli-'));
    const file = join(dir, 'audit.jsonl');
    const listeners = [{ name: 'audit', use: './test/fixtures/audit-listener.mjs', resources: ['bucket'], file }];
    const server = run(['start'], { QUIRE_DATA_DIR: dir, PORT: '0', QUIRE_EVENT_LISTENERS: JSON.stringify(listeners) });
    const url = await server.listening;
    expect((await fetch(`${url}buckets/audited`, { method: 'PUT', headers: { Authorization: auth } })).status).toBe(
      201,
    );
    const lines = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { phase: string; payload?: { uri: string } });
    expect(lines[0]).toMatchObject({ phase: 'transaction', payload: { uri: '/buckets/audited' } });
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    expect(readFileSync(file, 'utf8')).toMatch(/"phase":"closed"/);
  }, 30_000);

  it('requires an explicit userid secret on PostgreSQL', async () => {
    const bad = run(['start'], { QUIRE_STORAGE_URL: 'postgresql://postgres@127.0.0.1:5432/test' });
    expect(await bad.exited).toBe(78);
    expect(bad.output()).toMatch(/userid_hmac_secret/);
  }, 30_000);
});
