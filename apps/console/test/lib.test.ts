/** The console's logic without a browser: query strings, routes, diffs, CSV, import parsing, schema checks. */
import { describe, expect, it } from 'vitest';
import { parseCsv, toCsv } from '../src/lib/csv.js';
import { changedFields, diffLines, hunks, stableStringify } from '../src/lib/diff.js';
import { filterValue, nextSort, parseFilterParam, parseListQuery, toSearchParams } from '../src/lib/filters.js';
import { parseImport } from '../src/lib/importer.js';
import { withLimit } from '../src/lib/paged-list.js';
import { inheritedGrants, type Level, levelsOfUri } from '../src/lib/permissions.js';
import { hrefOfUri, parseRoute } from '../src/lib/router.js';
import { coerceCell, readablePath } from '../src/lib/schema.js';
import { parseTokenResponse } from '../src/lib/session.js';
import { validateRecord } from '../src/lib/validate.js';

describe('filters', () => {
  it('reads operators in the order the server does', () => {
    expect(parseFilterParam('contains_any_tags', '["a"]')).toEqual({
      field: 'tags',
      op: 'contains_any',
      value: '["a"]',
    });
    expect(parseFilterParam('min_age', '3')).toEqual({ field: 'age', op: 'min', value: '3' });
    expect(parseFilterParam('person.name', 'Ben')).toEqual({ field: 'person.name', op: 'eq', value: 'Ben' });
    expect(parseFilterParam('bad-name', 'x')).toBeNull();
  });

  it('round-trips a query, ignoring other reserved parameters', () => {
    const query = parseListQuery(
      new URLSearchParams('like_title=milk&_sort=-n,title&_fields=title&_expected=1&gt_n=3'),
    );
    expect(query).toEqual({
      filters: [
        { field: 'title', op: 'like', value: 'milk' },
        { field: 'n', op: 'gt', value: '3' },
      ],
      sort: ['-n', 'title'],
      fields: ['title'],
    });
    expect(String(toSearchParams(query))).toBe('like_title=milk&gt_n=3&_sort=-n%2Ctitle&_fields=title');
  });

  it('quotes what must be a string: like values, ids', () => {
    expect(filterValue({ field: 'title', op: 'like', value: '10' })).toBe('"10"');
    expect(filterValue({ field: 'title', op: 'like', value: 'mi*' })).toBe('mi*');
    expect(filterValue({ field: 'id', op: 'eq', value: '123' })).toBe('"123"');
    expect(filterValue({ field: 'id', op: 'in', value: '1, b' })).toBe('"1",b');
    expect(filterValue({ field: 'n', op: 'eq', value: '2' })).toBe('2');
  });

  it('cycles a column through ascending, descending, default', () => {
    expect(nextSort([], 'n')).toEqual(['n']);
    expect(nextSort(['n'], 'n')).toEqual(['-n']);
    expect(nextSort(['-n'], 'n')).toEqual([]);
  });

  it('changes the page size of a Next-Page URL and nothing else', () => {
    expect(withLimit('http://h/v1/buckets/b/collections/c/records?_sort=-n&_limit=100&_token=abc%3D', 2000)).toBe(
      'http://h/v1/buckets/b/collections/c/records?_sort=-n&_limit=2000&_token=abc%3D',
    );
  });
});

describe('routes', () => {
  it('parses every page', () => {
    expect(parseRoute('')).toEqual({ name: 'home' });
    expect(parseRoute('#/buckets/b%20x/history')).toEqual({ name: 'bucket', bid: 'b x', tab: 'history' });
    const record = parseRoute('#/buckets/b/collections/c/records/r/permissions?_sort=n');
    expect(record).toMatchObject({
      name: 'collection',
      bid: 'b',
      cid: 'c',
      rid: 'r',
      recordTab: 'permissions',
      tab: 'records',
    });
    expect(record.name === 'collection' && String(record.query)).toBe('_sort=n');
    expect(parseRoute('#/buckets/b/collections/c/new')).toMatchObject({ isNew: true });
    expect(parseRoute('#/buckets/b/groups/g/attributes')).toEqual({
      name: 'group',
      bid: 'b',
      gid: 'g',
      tab: 'attributes',
    });
    expect(parseRoute('#/auth/google/eyJh/b+c=')).toEqual({
      name: 'openid-callback',
      provider: 'google',
      token: 'eyJh/b+c=',
    });
    expect(parseRoute('#/nope')).toEqual({ name: 'not-found', path: '/nope' });
  });

  it('links object URIs to their pages', () => {
    expect(hrefOfUri('/buckets/b/collections/c/records/r')).toBe('#/buckets/b/collections/c/records/r');
    expect(hrefOfUri('/buckets/b/groups/g')).toBe('#/buckets/b/groups/g');
    expect(hrefOfUri('/')).toBeNull();
  });
});

describe('diff', () => {
  it('finds the changed lines of two JSON values, keys sorted', () => {
    const lines = diffLines(
      stableStringify({ b: 1, a: 'x', c: [1, 2] }),
      stableStringify({ a: 'y', b: 1, c: [1, 2, 3] }),
    );
    expect(
      lines
        .filter((line) => line.kind !== 'same')
        .map((line) => `${line.kind === 'added' ? '+' : '-'}${line.text.trim()}`),
    ).toEqual(['-"a": "x",', '+"a": "y",', '-2', '+2,', '+3']);
    // Every line of both texts is accounted for, in order.
    expect(lines.filter((line) => line.kind !== 'added').map((line) => line.oldLine)).toEqual(
      lines.filter((line) => line.kind !== 'added').map((_, i) => i + 1),
    );
  });

  it('handles empty and identical texts', () => {
    expect(diffLines('', 'a').map((line) => line.kind)).toEqual(['removed', 'added']);
    expect(diffLines('a\nb', 'a\nb').every((line) => line.kind === 'same')).toBe(true);
  });

  it('folds long unchanged runs', () => {
    const before = Array.from({ length: 40 }, (_, i) => `line ${i}`).join('\n');
    const after = before.replace('line 20', 'line twenty');
    const groups = hunks(diffLines(before, after), 2);
    expect(groups[0]).toMatchObject({ skippedBefore: 18 });
    expect(groups[0]!.lines).toHaveLength(6);
    expect(groups[1]).toMatchObject({ skippedBefore: 17, lines: [] });
  });

  it('lists changed fields', () => {
    expect(changedFields({ a: 1, b: [1], c: 0 }, { a: 1, b: [2], d: 1 })).toEqual([
      { field: 'b', kind: 'changed' },
      { field: 'c', kind: 'removed' },
      { field: 'd', kind: 'added' },
    ]);
  });
});

describe('CSV and import files', () => {
  it('parses quotes, separators, line breaks and a BOM', () => {
    expect(parseCsv('\uFEFFid;title\r\na;"x; ""y""\nz"\r\n\r\nb;w')).toEqual([
      ['id', 'title'],
      ['a', 'x; "y"\nz'],
      ['b', 'w'],
    ]);
    expect(
      parseCsv(
        toCsv([
          ['a', 'b,c'],
          ['"q"', ''],
        ]),
      ),
    ).toEqual([
      ['a', 'b,c'],
      ['"q"', ''],
    ]);
  });

  it('types CSV cells: detected, as text, or by the schema', () => {
    const csv = 'id,title,n,done,tags,zip\n1,Milk,3,true,"[""a""]",007\n2,,x,no,,';
    expect(parseImport('t.csv', csv).rows).toEqual([
      { row: 1, id: '1', data: { title: 'Milk', n: 3, done: true, tags: ['a'], zip: '007' } },
      { row: 2, id: '2', data: { n: 'x', done: 'no' } },
    ]);
    expect(parseImport('t.csv', csv, { typing: 'text' }).rows[0]!.data).toEqual({
      title: 'Milk',
      n: '3',
      done: 'true',
      tags: '["a"]',
      zip: '007',
    });
    const schema = {
      type: 'object',
      properties: { n: { type: 'integer' }, done: { type: 'boolean' }, zip: { type: 'string' } },
    };
    expect(parseImport('t.csv', csv, { schema }).rows[1]!.data).toEqual({ n: 'x', done: false });
    expect(coerceCell('12', { type: 'string' }, {})).toBe('12');
  });

  it('reads JSON lists, {data: [...]} and JSON lines, dropping server fields', () => {
    expect(parseImport('a.json', '[{"id":"a","last_modified":1,"x":1},{"x":2}]').rows).toEqual([
      { row: 1, id: 'a', data: { x: 1 } },
      { row: 2, data: { x: 2 } },
    ]);
    expect(parseImport('a.json', '{"data":[{"x":1}]}').rows).toHaveLength(1);
    const lines = parseImport('a.jsonl', '{"x":1}\nnot json\n{"x":3}\n');
    expect(lines.format).toBe('JSON lines');
    expect(lines.rows.map((row) => row.data.x)).toEqual([1, 3]);
    expect(lines.problems).toEqual(['Line 2: not valid JSON']);
  });
});

describe('schema validation in the browser, with the server rules', () => {
  const schema = {
    type: 'object',
    properties: {
      title: { type: 'string', minLength: 1 },
      priority: { type: 'integer', maximum: 5 },
      when: { type: 'string', format: 'date' },
    },
    required: ['title', 'last_modified'],
    additionalProperties: false,
  };

  it('ignores server fields and an id the schema does not declare', () => {
    expect(validateRecord({ title: 'a', last_modified: 1, schema: 2 }, schema, 'some-id')).toEqual([]);
  });

  it('names each failing field', () => {
    expect(
      validateRecord({ priority: 9, when: 'tomorrow', extra: 1 }, schema).map(
        (error) => `${readablePath(error.path)} ${error.message}`,
      ),
    ).toEqual([
      'title is required',
      'extra is not allowed by the schema',
      'priority must be at most 5',
      'when must be a date (YYYY-MM-DD)',
    ]);
  });

  it('reports a schema it cannot compile', () => {
    expect(validateRecord({}, { type: 'object', properties: { a: { pattern: '(' } } })[0]!.message).toMatch(
      /cannot be used/,
    );
  });
});

describe('permissions', () => {
  it('finds what a principal inherits from the levels above and implied permissions', () => {
    const levels: Level[] = [
      {
        kind: 'bucket' as const,
        uri: '/buckets/b',
        permissions: { write: ['account:admin'], read: ['/buckets/b/groups/g'] },
      },
      { kind: 'collection' as const, uri: '/buckets/b/collections/c', permissions: { 'record:create': ['account:x'] } },
      { kind: 'record' as const, uri: '/buckets/b/collections/c/records/r', permissions: { write: ['account:y'] } },
    ];
    expect(inheritedGrants(levels, 'account:admin', 'write')).toEqual([
      { kind: 'bucket', uri: '/buckets/b', permission: 'write' },
    ]);
    expect(inheritedGrants(levels, '/buckets/b/groups/g', 'read')).toEqual([
      { kind: 'bucket', uri: '/buckets/b', permission: 'read' },
    ]);
    expect(inheritedGrants(levels, 'account:y', 'read')).toEqual([
      { kind: 'record', uri: '/buckets/b/collections/c/records/r', permission: 'write' },
    ]);
    expect(inheritedGrants(levels, 'account:x', 'read')).toEqual([]);
    expect(levelsOfUri('/buckets/b/groups/g')).toEqual([
      { kind: 'bucket', uri: '/buckets/b' },
      { kind: 'group', uri: '/buckets/b/groups/g' },
    ]);
  });
});

describe('OpenID', () => {
  it('reads the access token the server forwards, and explains a refusal', () => {
    const encoded = encodeURIComponent(btoa(JSON.stringify({ access_token: 'tok', token_type: 'Bearer' })));
    expect(parseTokenResponse(encoded)).toBe('tok');
    expect(() => parseTokenResponse(btoa(JSON.stringify({ error: 'access_denied' })))).toThrow('access_denied');
    expect(() => parseTokenResponse('%%%')).toThrow(/could not be read/);
  });
});

describe('the production build', () => {
  it('ships no source map (the server would hand it to anyone): vite build.sourcemap is off', async () => {
    const { default: config } = await import('../vite.config.js');
    expect((config as { build?: { sourcemap?: unknown } }).build?.sourcemap).toBe(false);
  });
});
