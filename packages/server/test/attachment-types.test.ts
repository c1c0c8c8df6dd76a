/**
 * What an uploaded file is said to be, and what names it may have (issue 37, items 1 and 4), on
 * both file backends (a local directory, a real S3-compatible server):
 * - the recorded `mimetype` comes from the extension, never from the part's `Content-Type`
 *   alone, and claims an active type (HTML, XHTML, SVG, XML, scripts) only when the extension
 *   names it and the first bytes are markup;
 * - files are served so that opening one runs nothing (CSP `sandbox`; anything but images,
 *   audio, video, PDF and plain text as a download), on S3 by the object's own headers;
 * - a file name a backend cannot store is the caller's mistake: 400 with the rule, logged at
 *   info, never a 503 — also for generated names.
 */
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import { buildServer } from '../src/app.js';
import { isActiveType, looksLikeMarkup, recordedTypeOf } from '../src/attachments/media-types.js';
import { FILE_BACKENDS, useFileStore } from './helpers/attachments.js';
import { basicAuth, testSettings, useEmbeddedStore } from './helpers/embedded-server.js';
import { logCapture } from './helpers/logs.js';
import { fileForm } from './helpers/multipart.js';
import { s3Client } from './helpers/s3.js';

const alice = basicAuth('alice');
const SVG = '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script></svg>';
const HTML = '<!doctype html><script>alert(1)</script>';
const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');

describe('recordedTypeOf (generated names, types and bytes)', () => {
  it('never claims an active type unless the extension names it and the bytes are markup', () => {
    const extension = fc.constantFrom('', '.png', '.svg', '.html', '.htm', '.xhtml', '.xml', '.js', '.txt', '.zzz');
    const sent = fc.option(
      fc.constantFrom('image/svg+xml', 'text/html', 'application/xhtml+xml', 'image/png', 'text/x+xml', 'a/b'),
      { nil: undefined },
    );
    const head = fc.oneof(
      fc.uint8Array({ maxLength: 64 }),
      fc.constantFrom(SVG, HTML, ' \n<x', '\ufeff<svg').map((text) => new TextEncoder().encode(text)),
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 10 }), extension, sent, head, (base, ext, type, bytes) => {
        const recorded = recordedTypeOf(`${base}${ext}`, type, bytes, {});
        if (isActiveType(recorded)) {
          expect(['.svg', '.html', '.htm', '.xhtml', '.xml', '.js']).toContain(ext);
          expect(looksLikeMarkup(bytes)).toBe(true);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

for (const fileBackend of FILE_BACKENDS) {
  describe(`attachment types and names, ${fileBackend} files`, { timeout: 60_000 }, () => {
    const files = useFileStore(fileBackend);
    const store = useEmbeddedStore();
    let counter = 0;

    async function place(app: FastifyInstance): Promise<string> {
      counter += 1;
      await app.inject({ method: 'PUT', url: `/v1/buckets/t${counter}`, headers: alice });
      await app.inject({ method: 'PUT', url: `/v1/buckets/t${counter}/collections/c`, headers: alice });
      return `/v1/buckets/t${counter}/collections/c/records`;
    }

    const upload = (app: FastifyInstance, url: string, filename: string, content: string | Buffer, type: string) => {
      const form = fileForm({ filename, content, contentType: type });
      return app.inject({
        method: 'POST',
        url,
        payload: form.body,
        headers: { ...alice, 'content-type': form.contentType },
      });
    };

    it('records the type from the extension, active only when the bytes agree', async () => {
      const app = await store.serverWith(files.settings({ attachment_extensions: 'any' }));
      const records = await place(app);
      const cases: Array<[string, string | Buffer, string, string]> = [
        ['receipt.png', SVG, 'image/svg+xml', 'image/png'],
        ['photo.jpg', 'not really a jpeg', 'image/png', 'image/jpeg'],
        ['drawing.svg', SVG, 'image/png', 'image/svg+xml'],
        ['drawing.svg', PNG, 'image/svg+xml', 'application/octet-stream'],
        ['page.html', HTML, 'text/plain', 'text/html'],
        ['page.html', 'plain words', 'text/html', 'application/octet-stream'],
        ['page.xhtml', `\ufeff  ${SVG}`, 'application/xhtml+xml', 'application/xhtml+xml'],
        ['notes.txt', HTML, 'text/html', 'text/plain'],
        ['data.zzz', HTML, 'text/html', 'application/octet-stream'],
        ['data.zzz', SVG, 'image/svg+xml', 'application/octet-stream'],
        ['README', 'words', 'text/plain', 'text/plain'],
        ['README', HTML, 'application/xhtml+xml', 'application/octet-stream'],
        ['empty.svg', '', 'image/svg+xml', 'application/octet-stream'],
      ];
      for (const [index, [filename, content, sent, expected]] of cases.entries()) {
        const response = await upload(app, `${records}/r${index}/attachment`, filename, content, sent);
        expect(response.statusCode, `${filename} ${response.body}`).toBe(201);
        expect(response.json().mimetype, `${filename} sent as ${sent}`).toBe(expected);
        expect((await files.read(response.json().location))?.toString('latin1')).toBe(
          Buffer.from(content).toString('latin1'),
        );
      }
    });

    it('serves files so that opening one runs nothing: sandboxed, non-inline types downloaded', async () => {
      const app = await store.serverWith(files.settings({ attachment_extensions: 'any' }));
      const records = await place(app);
      const svg = (await upload(app, `${records}/svg/attachment`, 'drawing.svg', SVG, 'image/svg+xml')).json();
      const png = (await upload(app, `${records}/png/attachment`, 'dot.png', PNG, 'image/png')).json();
      if (fileBackend === 'local') {
        for (const [attachment, disposition] of [
          [svg, /^attachment; filename\*=UTF-8''/],
          [png, /^inline; filename\*=UTF-8''/],
        ] as const) {
          for (const url of [
            `/v1/attachments/${attachment.location}`,
            `${records}/${attachment === svg ? 'svg' : 'png'}/attachment`,
          ]) {
            const served = await app.inject({ url, headers: alice });
            expect(served.statusCode, url).toBe(200);
            expect(served.headers['content-security-policy']).toMatch(/default-src 'none'.*sandbox/);
            expect(served.headers['x-content-type-options']).toBe('nosniff');
            expect(served.headers['content-disposition']).toMatch(disposition);
          }
        }
      } else {
        const endpoint = files.settings().attachment_aws_endpoint_url as string;
        const bucket = files.settings().attachment_aws_bucket_name as string;
        const client = s3Client({ endpoint });
        try {
          const head = async (key: string) => client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
          expect(await head(svg.location)).toMatchObject({
            ContentType: 'image/svg+xml',
            ContentDisposition: "attachment; filename*=UTF-8''drawing.svg",
          });
          expect(await head(png.location)).toMatchObject({
            ContentType: 'image/png',
            ContentDisposition: "inline; filename*=UTF-8''dot.png",
          });
        } finally {
          client.destroy();
        }
      }
    });

    it('file names a backend cannot store: 400 with the rule, nothing kept, logged at info', async () => {
      const { stream, lines } = logCapture();
      const settings = testSettings({
        ...files.settings({ attachment_extensions: 'any', attachment_randomize: false }),
        log_level: 'info',
        log_format: 'json',
      });
      const app = await buildServer({ settings, storage: store.storage, logger: { stream } });
      try {
        const records = await place(app);
        const before = await files.list();
        const cases: Array<[string, RegExp]> = [
          ['x.a b', /File extension must be 1 to 24 ASCII letters/],
          ['x.<svg>', /File extension must be/],
          ['x.é', /File extension must be/],
          ['x.a;b', /File extension must be/],
          [`x.${'e'.repeat(2000)}`, /File name is longer than 255 characters/],
          [`${'n'.repeat(5000)}.png`, /File name is longer than 255 characters/],
          ['x\ty.png', /File name contains control characters/],
        ];
        for (const [index, [filename, message]] of cases.entries()) {
          const response = await upload(app, `${records}/n${index}/attachment`, filename, 'x', 'text/plain');
          expect(response.statusCode, filename.slice(0, 40)).toBe(400);
          expect(response.json()).toMatchObject({ errno: 107, message: expect.stringMatching(message) });
        }
        expect(await files.list()).toEqual(before);
        expect(await files.notes()).toEqual([]);
      } finally {
        await app.close();
      }
      const refused = lines.filter((line) => line.status === 400);
      expect(refused).toHaveLength(7);
      expect(refused.every((line) => line.level === 30)).toBe(true);
      expect(lines.filter((line) => (line.level as number) >= 50)).toEqual([]);
    });

    it('generated file names never get a 5xx (extensions any, randomize on and off)', async () => {
      const randomized = await store.serverWith(files.settings({ attachment_extensions: 'any' }));
      const named = await store.serverWith(
        files.settings({ attachment_extensions: 'any', attachment_randomize: false }),
      );
      const records = [await place(randomized), await place(named)];
      const name = fc.oneof(
        fc.string({ maxLength: 300 }),
        fc.string({ unit: 'binary', maxLength: 40 }),
        fc
          .tuple(fc.string({ maxLength: 20 }), fc.string({ unit: 'grapheme', maxLength: 30 }))
          .map(([a, b]) => `${a}.${b}`),
        fc.nat({ max: 6000 }).map((length) => `x.${'a'.repeat(length)}`),
      );
      let index = 0;
      await fc.assert(
        fc.asyncProperty(name, fc.boolean(), async (filename, unrandomized) => {
          index += 1;
          const app = unrandomized ? named : randomized;
          const url = `${records[unrandomized ? 1 : 0]}/g${index}/attachment`;
          const response = await upload(app, url, filename.replace(/["\r\n]/g, '_'), 'x', 'text/plain');
          expect(response.statusCode, JSON.stringify(filename).slice(0, 80)).toBeLessThan(500);
        }),
        { numRuns: 150 },
      );
    });
  });
}
