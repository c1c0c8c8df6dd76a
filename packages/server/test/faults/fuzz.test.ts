/**
 * Property-based fuzzing of the HTTP API (issue 19), on both stores, over real HTTP: every
 * endpoint family (root, buckets, collections, records, groups, permissions, batch, history,
 * accounts, the change monitor, utilities) with hostile bodies (deep nesting, many or huge keys,
 * `__proto__` / `constructor` keys, wrong types, invalid JSON, huge numbers, NUL and lone
 * surrogates), headers (If-Match garbage, Content-Type variants, huge headers), paths (encoded,
 * dot segments, double slashes) and query strings (`_limit`, `_since`, `_sort`, `_fields`, `in_`,
 * `like_` garbage); then malformed HTTP written byte by byte on sockets.
 *
 * Properties: no 5xx, no hang (each request has a deadline), every error body in the protocol's
 * format `{code, errno, error, message}`, and no prototype pollution. The seed is fixed
 * (QUIRE_TEST_FUZZ_SEED, default 19) and the number of requests per store settable
 * (QUIRE_TEST_FUZZ_RUNS, default 2500, plus a fifth as many raw ones); a failure prints the
 * smallest request fast-check finds that still fails, with the seed to replay it.
 */
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeOnBackends } from '../helpers/backends.js';
import { basicAuth } from '../helpers/embedded-server.js';
import { listen, protocolErrorProblem, type RawResponse, rawRequest } from './protocol.js';

const SEED = Number(process.env.QUIRE_TEST_FUZZ_SEED ?? 19);
const RUNS = Number(process.env.QUIRE_TEST_FUZZ_RUNS ?? 2500);
const RAW_RUNS = Math.ceil(RUNS / 5);
const DEADLINE_MS = 10_000;

const ALICE = basicAuth('alice').authorization;
const BOB = basicAuth('bob').authorization;
const ACCOUNT = `Basic ${Buffer.from('fuzzer:fuzzer-password-1').toString('base64')}`;

// ---------------------------------------------------------------------------------------------
// Request parts

const ids = fc.oneof(
  { weight: 10, arbitrary: fc.constantFrom('fz', 'c', 'g', 'r', 'fuzzer', 'default') },
  { weight: 2, arbitrary: fc.stringMatching(/^[a-zA-Z0-9_-]{1,12}$/) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '__proto__',
      'constructor',
      'prototype',
      '..',
      '.',
      '%2e%2e',
      '%2F',
      'a%2Fb',
      'a%00b',
      '%C3%28',
      '%E2%82',
      '%25',
      '~',
      'x'.repeat(300),
      '%C3%A9',
      '%F0%9F%98%80',
      'a%20b',
      '%ED%A0%80',
      'null',
      '1',
      '-',
      '_',
      'a.b',
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 12, unit: 'binary' }).map(encodeURIComponent) },
);

/** Endpoint families: `{b}` `{c}` `{r}` `{g}` `{a}` are filled with ids. */
const TEMPLATES = [
  '/v1/',
  '/v1',
  '/',
  '/v2/',
  '/buckets',
  '/v1/buckets',
  '/v1/buckets/{b}',
  '/v1/buckets/{b}/collections',
  '/v1/buckets/{b}/collections/{c}',
  '/v1/buckets/{b}/collections/{c}/records',
  '/v1/buckets/{b}/collections/{c}/records/{r}',
  '/v1/buckets/{b}/groups',
  '/v1/buckets/{b}/groups/{g}',
  '/v1/buckets/{b}/history',
  '/v1/permissions',
  '/v1/batch',
  '/v1/accounts',
  '/v1/accounts/{a}',
  '/v1/accounts/{a}/validate/{r}',
  '/v1/accounts/{a}/reset-password',
  '/v1/__heartbeat__',
  '/v1/__lbheartbeat__',
  '/v1/__version__',
  '/v1/__api__',
  '/v1/contribute.json',
  '/v1/buckets/monitor/collections/changes/records',
  '/v1/buckets/default',
  '/v1/buckets/default/collections/{c}/records',
  '/v1/buckets/default/collections/{c}/records/{r}',
  '/v1/openid/{a}/login',
  '/v1/admin/',
  '/v1/__flush__',
];

/** The families holding data, aimed at more often than the utilities. */
const DATA_TEMPLATES = TEMPLATES.filter(
  (template) => /\{|batch|permissions|accounts$/.test(template) && !/validate|reset|openid/.test(template),
);

const paths = fc
  .tuple(
    fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(...DATA_TEMPLATES) },
      { weight: 1, arbitrary: fc.constantFrom(...TEMPLATES) },
    ),
    // Each place mostly names its fixture, so that requests reach objects that exist.
    fc.tuple(
      ...['fz', 'c', 'r', 'g', 'fuzzer'].map((fixture) =>
        fc.oneof({ weight: 3, arbitrary: fc.constant(fixture) }, { weight: 2, arbitrary: ids }),
      ),
    ),
  )
  .map(([template, [b, c, r, g, a]]) => {
    const path = template
      .replace('{b}', b!)
      .replace('{c}', c!)
      .replace('{r}', r!)
      .replace('{g}', g!)
      .replace('{a}', a!);
    return { template, path };
  })
  .chain(({ template, path }) =>
    fc
      .oneof(
        { weight: 12, arbitrary: fc.constant('none') },
        { weight: 6, arbitrary: fc.constantFrom('slash', 'double', 'dot', 'dotdot', 'upper', 'encoded') },
      )
      .map((mutation) => {
        switch (mutation) {
          case 'slash':
            return { template, path: `${path}/` };
          case 'double':
            return { template, path: path.replace(/\/(?=[^/]*$)/, '//') };
          case 'dot':
            return { template, path: path.replace('/v1/', '/v1/./') };
          case 'dotdot':
            return { template, path: path.replace('/v1/', '/v1/x/../') };
          case 'upper':
            return { template, path: path.toUpperCase() };
          case 'encoded':
            return { template, path: path.replace(/[a-z]/, (letter) => `%${letter.charCodeAt(0).toString(16)}`) };
          default:
            return { template, path };
        }
      }),
  );

const QUERY_NAMES = [
  '_limit',
  '_since',
  '_before',
  '_to',
  '_sort',
  '_fields',
  '_token',
  '_expected',
  'in_id',
  'exclude_id',
  'like_title',
  'has_x',
  'contains_tags',
  'contains_any_tags',
  'min_n',
  'max_n',
  'lt_n',
  'gt_n',
  'not_n',
  'eq_n',
  'title',
  'last_modified',
  'in_last_modified',
  'a.b.0.1',
  '__proto__',
  'constructor.prototype.polluted',
  'in___proto__',
  'id',
  'deleted',
  'target.data.id',
  'uri',
  'resource_name',
  'x\u0000',
  'é',
  '',
];
const QUERY_VALUES = fc.oneof(
  fc.constantFrom(
    '',
    '0',
    '1',
    '-1',
    '10',
    '1e400',
    '9'.repeat(30),
    '99999999999999999999',
    'null',
    'true',
    '"x"',
    '[1,2]',
    '{"a":1}',
    '"',
    '\u0000',
    'a,b,,c',
    '"123"',
    'W/"1"',
    '*',
    '-last_modified',
    'title,-n,a.b.1.2',
    '_',
    ',',
    ',,,,',
    'eyJsYXN0X29iamVjdCI6e30sIm9mZnNldCI6MSwibm9uY2UiOiJ4In0=',
    'e30=',
    'not base64!',
    '%',
    'é',
    '\ud800',
    Array.from({ length: 300 }, (_, index) => index).join(','),
  ),
  fc.string({ maxLength: 20 }),
  fc.integer().map(String),
);
const queries = fc
  .array(fc.tuple(fc.constantFrom(...QUERY_NAMES), QUERY_VALUES), { maxLength: 6 })
  .map((params) => (params.length === 0 ? '' : `?${new URLSearchParams(params).toString()}`));

// JSON text, built by hand so that keys such as `__proto__` and duplicates can be sent.
const KEYS = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      'data',
      'permissions',
      'id',
      'last_modified',
      'deleted',
      'title',
      'n',
      'tags',
      'members',
      'schema',
      'password',
      'x',
      'requests',
      'defaults',
      'method',
      'path',
      'headers',
      'body',
      'read',
      'write',
    ),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '__proto__',
      'constructor',
      'prototype',
      'polluted',
      'toString',
      'hasOwnProperty',
      '',
      ' ',
      'a.b',
      '$ref',
      'type',
      'properties',
      'required',
      '\u0000',
      '\ud800',
      '𝄞',
      'k'.repeat(1000),
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
);
const LEAVES = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 0 }).map((value) => JSON.stringify(value)) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '1e999',
      '-1e999',
      '123456789012345678901234567890',
      '0.0000000000000000000001',
      '-0',
      '9007199254740993',
      '"\\u0000"',
      '"\\ud800"',
      '"\\udfff\\ud800"',
      '"system.Everyone"',
      '"system.Authenticated"',
      '["system.Everyone"]',
      '"/buckets/fz/groups/g"',
      '{}',
      '[]',
      '"*"',
      '"x"',
      '{"type":"object","properties":{"n":{"type":"number"}},"required":["n"]}',
      '{"type":"string","pattern":"(a+)+$"}',
      '{"$ref":"http://example.invalid/s"}',
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 30, unit: 'grapheme' }).map((text) => JSON.stringify(text)) },
);
const { json } = fc.letrec<{ json: string; object: string; array: string }>((tie) => ({
  json: fc.oneof({ depthSize: 'small', maxDepth: 5 }, LEAVES, tie('object'), tie('array')),
  object: fc
    .array(fc.tuple(KEYS, tie('json')), { maxLength: 5 })
    .map((entries) => `{${entries.map(([key, value]) => `${JSON.stringify(key)}:${value}`).join(',')}}`),
  array: fc.array(tie('json'), { maxLength: 5 }).map((items) => `[${items.join(',')}]`),
}));

const PATCH_PATHS = [
  '/data/x',
  '/data/__proto__/polluted',
  '/data/constructor/prototype/polluted',
  '/permissions/read/system.Everyone',
  '/permissions/write/x',
  '/permissions/bogus/x',
  '/data',
  '',
  'data',
  '/data/a/b/c',
  '/data/-',
  '/data/tags/99999',
  '/data/tags/-',
  '/__proto__/polluted',
];
const jsonPatches = fc
  .array(
    fc.record({
      op: fc.constantFrom('add', 'remove', 'replace', 'move', 'copy', 'test', 'bogus'),
      path: fc.constantFrom(...PATCH_PATHS),
      from: fc.constantFrom(...PATCH_PATHS),
      value: json,
    }),
    { maxLength: 6 },
  )
  .map((operations) => {
    const items = operations.map(
      ({ op, path, from, value }) =>
        `{"op":${JSON.stringify(op)},"path":${JSON.stringify(path)},` +
        `"from":${JSON.stringify(from)},"value":${value}}`,
    );
    return `[${items.join(',')}]`;
  });

const deep = fc
  .constantFrom(50, 99, 100, 101, 1000, 10_000)
  .map((depth) => `{"data":{"x":${'['.repeat(depth)}${']'.repeat(depth)}}}`);
const wide = fc
  .constantFrom(9_000, 10_001, 50_000)
  .map((count) =>
    JSON.stringify({ data: Object.fromEntries(Array.from({ length: count }, (_, index) => [`k${index}`, index])) }),
  );
const invalid = fc.constantFrom(
  '{',
  '{"data":',
  '[',
  'nul',
  '{"a":1,}',
  "{'a':1}",
  '\u0000',
  '  ',
  '{"data":{}}garbage',
  '"',
  '{"data":{"x":1}',
  '\ufeff{}',
  '{"data":{"x":"\\u00"}}',
);
const wrapped = fc
  .tuple(json, fc.option(json))
  .map(([data, permissions]) => `{"data":${data}${permissions === null ? '' : `,"permissions":${permissions}`}}`);
const subRequests = fc
  .array(
    fc.tuple(
      fc.constantFrom('GET', 'PUT', 'POST', 'PATCH', 'DELETE', 'HEAD', 'TRACE', 'BOGUS'),
      paths,
      queries,
      fc.option(wrapped),
      fc.option(json),
    ),
    { maxLength: 4 },
  )
  .map((requests) => {
    const items = requests.map(
      ([method, { path }, query, body, headers]) =>
        `{"method":"${method}","path":${JSON.stringify(path.replace(/^\/v1/, '') + query)}` +
        `${body === null ? '' : `,"body":${body}`}${headers === null ? '' : `,"headers":${headers}`}}`,
    );
    return `{"requests":[${items.join(',')}]}`;
  });

// Bodies that might be accepted, so that the fuzzer gets past validation too.
const plausible = fc
  .tuple(
    fc.dictionary(fc.constantFrom('n', 'title', 'tags', 'members', 'x', 'y', 'schema', 'password'), LEAVES, {
      maxKeys: 4,
    }),
    fc.boolean(),
  )
  .map(
    ([data, withPermissions]) =>
      `{"data":{${Object.entries(data)
        .map(([key, value]) => `"${key}":${value}`)
        .join(',')}}${withPermissions ? ',"permissions":{"read":["system.Everyone"]}' : ''}}`,
  );

const bodies = fc.oneof(
  { weight: 6, arbitrary: plausible },
  { weight: 3, arbitrary: wrapped },
  { weight: 2, arbitrary: json },
  { weight: 2, arbitrary: jsonPatches },
  { weight: 2, arbitrary: subRequests },
  { weight: 1, arbitrary: deep },
  { weight: 1, arbitrary: wide },
  { weight: 1, arbitrary: invalid },
  { weight: 1, arbitrary: fc.constant('{"data":{"password":"fuzzer-password-2"}}') },
);

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/merge-patch+json',
  'application/json-patch+json',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=latin1',
  'APPLICATION/JSON',
  'application/json;;;',
  'garbage',
  '*/*',
  'application/json-patch+json; charset=utf-16',
];
/** `values` now and then (one time in `1 + absent`), else no such header. */
function sometimes<T>(values: fc.Arbitrary<T>, absent: number): fc.Arbitrary<T | undefined> {
  return fc.oneof({ weight: absent, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: values });
}

const headers = fc
  .record({
    authorization: fc.oneof(
      { weight: 8, arbitrary: fc.constant(ALICE) },
      { weight: 1, arbitrary: fc.constantFrom(BOB, ACCOUNT) },
      {
        weight: 1,
        arbitrary: fc.constantFrom(
          'Basic !!!',
          'Basic ',
          `Basic ${Buffer.from('fuzzer:wrong').toString('base64')}`,
          'Bearer garbage',
          'Digest x',
          '',
        ),
      },
      { weight: 1, arbitrary: fc.constant(undefined) },
    ),
    'if-match': sometimes(
      fc.constantFrom('"123"', '*', 'W/"1"', 'garbage', `"${'9'.repeat(40)}"`, '"-1"', '""', '"1", "2"'),
      8,
    ),
    'if-none-match': sometimes(fc.constantFrom('"123"', '*', 'garbage', `"${'9'.repeat(40)}"`, '"0"'), 8),
    'content-type': fc.oneof(
      { weight: 6, arbitrary: fc.constant('application/json') },
      { weight: 3, arbitrary: fc.constantFrom(...CONTENT_TYPES) },
      { weight: 1, arbitrary: fc.constant(undefined) },
    ),
    accept: sometimes(
      fc.constantFrom('application/json', '*/*', 'text/html', 'application/json;q=0', 'garbage', ''),
      8,
    ),
    'response-behavior': sometimes(fc.constantFrom('full', 'light', 'diff', 'bogus'), 6),
    origin: sometimes(fc.constantFrom('http://example.com', 'null', 'garbage'), 6),
    'access-control-request-method': sometimes(fc.constantFrom('GET', 'PUT', 'BOGUS'), 6),
    'x-forwarded-host': sometimes(fc.constantFrom('evil.example', 'evil.example/path'), 8),
    'x-pad': sometimes(fc.constant('a'.repeat(20_000)), 40),
  })
  .map(
    (values) =>
      Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined)) as Record<string, string>,
  );

const requests = fc.record({
  method: fc.oneof(
    { weight: 6, arbitrary: fc.constant('GET') },
    { weight: 3, arbitrary: fc.constantFrom('PUT', 'PATCH') },
    { weight: 2, arbitrary: fc.constantFrom('POST', 'DELETE', 'HEAD') },
    { weight: 1, arbitrary: fc.constantFrom('OPTIONS', 'PROPFIND', 'SEARCH') },
  ),
  target: paths,
  query: fc.oneof({ weight: 2, arbitrary: fc.constant('') }, { weight: 3, arbitrary: queries }),
  headers,
  body: fc.option(bodies, { freq: 2 }),
});

// Raw HTTP: complete requests (a body exactly as long as announced), malformed in every other way.
const rawRequests = fc
  .record({
    method: fc.constantFrom(
      'GET',
      'PUT',
      'get',
      'G E T',
      'FOO',
      'PRI',
      'CONNECT',
      'TRACE',
      '\u0000',
      '',
      'DELETE',
      'PATCH',
    ),
    target: fc.constantFrom(
      '/v1/',
      '/v1/buckets',
      '*',
      'http://evil.example/v1/',
      '/v1/buckets/a b',
      '/v1/%',
      '/v1/\u00e9',
      '//',
      '/v1/buckets?x=%',
      '',
      '/v1/batch',
      `/v1/${'a'.repeat(20_000)}`,
    ),
    version: fc.constantFrom('HTTP/1.1', 'HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/9.9', 'HTTP/1.1 x', 'HTTP/1', ''),
    lines: fc.array(
      fc.constantFrom(
        'Host: 127.0.0.1',
        'Host: evil.example',
        'Host:',
        'Bad Header: 1',
        'X-Fold: a\r\n continued',
        'Content-Length: 5',
        'Content-Length: -1',
        'Content-Length: abc',
        'Transfer-Encoding: chunked',
        'Transfer-Encoding: gzip',
        'Expect: 100-continue',
        'Expect: nope',
        `X-Big: ${'b'.repeat(20_000)}`,
        'Content-Type: application/json',
        `Authorization: ${ALICE}`,
        'Connection: keep-alive',
        'X-Nul: a\u0000b',
      ),
      { maxLength: 5 },
    ),
    body: fc.constantFrom('', '{}', '{"data":{}}', '{"requests":[{"path":"/"}]}', 'zz'),
    chunked: fc.constantFrom(
      '0\r\n\r\n',
      'zz\r\n\r\n',
      '2\r\n{}\r\n0\r\n\r\n',
      `1;ext=${'e'.repeat(20_000)}\r\nx\r\n0\r\n\r\n`,
    ),
  })
  .map(({ method, target, version, lines, body, chunked }) => {
    const head = [
      `${method} ${target} ${version}`.trimEnd(),
      ...lines.filter((line) => !/^Content-Length/.test(line)),
      'Connection: close',
    ];
    if (lines.includes('Transfer-Encoding: chunked')) return `${head.join('\r\n')}\r\n\r\n${chunked}`;
    const length = lines.find((line) => /^Content-Length/.test(line));
    if (length === 'Content-Length: 5')
      return `${head.join('\r\n')}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    return `${head.join('\r\n')}${length ? `\r\n${length}` : ''}\r\n\r\n`;
  });

// ---------------------------------------------------------------------------------------------

interface Figures {
  sent: number;
  raw: number;
  statuses: Map<number, number>;
  serverErrors: number;
  hangs: number;
  badBodies: number;
  /** Raw requests whose connection closed without an answer. */
  closedUnanswered: number;
}

function record(figures: Figures, status: number): void {
  figures.statuses.set(status, (figures.statuses.get(status) ?? 0) + 1);
  if (status >= 500) figures.serverErrors++;
}

function report(name: string, figures: Figures): string {
  const statuses = [...figures.statuses]
    .sort(([a], [b]) => a - b)
    .map(([status, count]) => `${status}: ${count}`)
    .join(', ');
  return (
    `[fuzz ${name}] seed ${SEED}: ${figures.sent} requests over HTTP + ${figures.raw} raw; statuses {${statuses}}; ` +
    `5xx: ${figures.serverErrors}; hangs: ${figures.hangs}; ` +
    `error bodies not in the protocol format: ${figures.badBodies}; ` +
    `raw connections closed unanswered: ${figures.closedUnanswered}`
  );
}

function prototypeSnapshot(): string {
  return JSON.stringify([
    Object.getOwnPropertyNames(Object.prototype).sort(),
    Object.getOwnPropertyNames(Array.prototype).sort(),
    Object.getOwnPropertyNames(Function.prototype).sort(),
  ]);
}

describeOnBackends('HTTP fuzzing (issue 19)', { timeout: 300_000 }, ({ name, serverWith }) => {
  let base: string;
  let port: number;
  const agent = new Agent({ connections: 4, headersTimeout: DEADLINE_MS, bodyTimeout: DEADLINE_MS });
  const figures: Figures = {
    sent: 0,
    raw: 0,
    statuses: new Map(),
    serverErrors: 0,
    hangs: 0,
    badBodies: 0,
    closedUnanswered: 0,
  };
  const prototypes = prototypeSnapshot();

  async function call(
    method: string,
    path: string,
    headerValues: Record<string, string>,
    body?: string,
  ): Promise<{ status: number; text: string }> {
    const response = await request(`${base}${path}`, {
      method: method as 'GET',
      headers: headerValues,
      body,
      dispatcher: agent,
    });
    return { status: response.statusCode, text: await response.body.text() };
  }

  /** The objects most requests aim at, made again now and then (the fuzzer deletes them too). */
  async function fixtures(): Promise<void> {
    const json = { 'content-type': 'application/json', authorization: ALICE };
    await call('PUT', '/v1/buckets/fz', json, '{"permissions":{"read":["system.Everyone"]}}');
    await call(
      'PUT',
      '/v1/buckets/fz/collections/c',
      json,
      '{"data":{"schema":{"type":"object","properties":{"n":{"type":"number"}}}}}',
    );
    await call('PUT', '/v1/buckets/fz/collections/c/records/r', json, '{"data":{"n":1,"title":"t","tags":["a"]}}');
    await call('PUT', '/v1/buckets/fz/groups/g', json, '{"data":{"members":["basicauth:x"]}}');
    await call(
      'PUT',
      '/v1/accounts/fuzzer',
      { 'content-type': 'application/json' },
      '{"data":{"password":"fuzzer-password-1"}}',
    );
  }

  beforeAll(async () => {
    const app = await serverWith({
      multiauth_policies: ['account', 'basicauth'],
      account_create_principals: ['system.Everyone'],
      history_enabled: true,
      experimental_collection_schema_validation: true,
      // Hashing is slow by design: keep the fuzzer's logins few and cheap.
      account_cache_ttl_seconds: 300,
      // Alice may write everywhere, whoever took a bucket over: requests get past the permission checks.
      bucket_write_principals: [`basicauth:${createHmac('sha256', 's').update('alice:pw').digest('hex')}`],
    });
    port = await listen(app);
    base = `http://127.0.0.1:${port}`;
    await fixtures();
  });

  afterAll(async () => {
    await agent.close();
    console.log(report(name, figures));
  });

  it(`answers ${RUNS} hostile requests without a 5xx, a hang or an error body outside the protocol`, async () => {
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(requests, async ({ method, target, query, headers: headerValues, body }) => {
        if (++runs % 250 === 0) await fixtures();
        figures.sent++;
        let answer: { status: number; text: string };
        try {
          answer = await call(method, `${target.path}${query}`, headerValues, body ?? undefined);
        } catch (error) {
          const code = (error as { code?: string }).code;
          if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') figures.hangs++;
          // What undici refuses to send is no server failure; anything else is.
          if (
            code === 'UND_ERR_INVALID_ARG' ||
            code === 'UND_ERR_NOT_SUPPORTED' ||
            code === 'ERR_INVALID_ARG_VALUE' ||
            code === 'ERR_INVALID_CHAR'
          ) {
            figures.sent--;
            return;
          }
          throw error;
        }
        record(figures, answer.status);
        expect(answer.status, answer.text.slice(0, 300)).toBeLessThan(500);
        if (answer.status >= 400 && method !== 'HEAD') {
          const problem = protocolErrorProblem(answer.status, answer.text);
          if (problem) figures.badBodies++;
          expect(problem, `${method} ${target.path}${query}`).toBeNull();
        }
      }),
      // Shrinks a failure to the smallest request that still fails, within a time budget.
      { seed: SEED, numRuns: RUNS, interruptAfterTimeLimit: 240_000 },
    );
    expect(prototypeSnapshot()).toBe(prototypes);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it(`answers ${RAW_RUNS} malformed raw requests in the protocol format, without a hang`, async () => {
    await fc.assert(
      fc.asyncProperty(rawRequests, async (text) => {
        figures.raw++;
        let response: RawResponse;
        try {
          response = await rawRequest(port, Buffer.from(text, 'latin1'), DEADLINE_MS);
        } catch (error) {
          // Closed without an answer is not a hang: Node does so for an HTTP/0.9 request line
          // of method PRI (`PRI /v1/`, the start of an HTTP/2 preface to it). Counted, printed.
          if (/no complete HTTP response/.test((error as Error).message)) {
            figures.closedUnanswered++;
            return;
          }
          figures.hangs++;
          throw error;
        }
        record(figures, response.status);
        expect(response.status, response.body.slice(0, 300)).toBeLessThan(500);
        if (response.status >= 400) {
          const problem = protocolErrorProblem(response.status, response.body);
          if (problem) figures.badBodies++;
          expect(problem, JSON.stringify(text.slice(0, 200))).toBeNull();
        }
      }),
      { seed: SEED, numRuns: RAW_RUNS, interruptAfterTimeLimit: 120_000 },
    );
    // The server still answers.
    expect((await call('GET', '/v1/', {})).status).toBe(200);
    expect(prototypeSnapshot()).toBe(prototypes);
  });
});
