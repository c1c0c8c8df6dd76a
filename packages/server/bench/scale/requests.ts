/** bench/scale.ts's requests: the rows of its table, each timed as the best of K samples. */
import { performance } from 'node:perf_hooks';
import { ALICE, ALICE_ENTRIES, FIRST, ITEMS, RECORDS_PATH, type Stage } from './data.js';

export interface Options {
  samples: number;
  budgetMs: number;
}

/**
 * The shortest duration (ms) of `request` over the samples, after two untimed calls. The best
 * of K, not the median: on a machine whose cores other work shares, a request's median mostly
 * measures how long it waited for a core; the best is what it costs.
 */
export async function best(request: () => Promise<void>, { samples, budgetMs }: Options): Promise<number> {
  await request();
  await request();
  const durations: number[] = [];
  const deadline = performance.now() + budgetMs;
  while (durations.length < samples && (durations.length < 5 || performance.now() < deadline)) {
    const start = performance.now();
    await request();
    durations.push(performance.now() - start);
  }
  return Math.min(...durations);
}

async function call(
  origin: string,
  method: string,
  path: string,
  expected: number,
  { body, headers = {} }: { body?: unknown; headers?: Record<string, string> } = {},
) {
  const response = await fetch(`${origin}${path}`, {
    method,
    headers: {
      Authorization: ALICE,
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (response.status !== expected)
    throw new Error(`${method} ${path}: expected ${expected}, got ${response.status} ${text.slice(0, 300)}`);
  return { headers: response.headers, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

const dataLength = (body: Record<string, unknown>) => (body.data as unknown[]).length;

function expectLength(what: string, actual: number, expected: number): void {
  if (actual !== expected) throw new Error(`${what}: expected ${expected} items, got ${actual}`);
}

/** The rows of the table: a label, what its scale is (records, collections…), and the request. */
export interface Row {
  label: string;
  scale: 'records' | 'collections' | 'ACEs';
  run: (origin: string, stage: Stage) => Promise<() => Promise<void>>;
}

export const ROWS: Row[] = [
  {
    label: 'GET one record',
    scale: 'records',
    run:
      async (origin, { records }) =>
      async () =>
        void (await call(origin, 'GET', `${RECORDS_PATH}/r${Math.floor(Math.random() * records)}`, 200)),
  },
  {
    label: 'first page (100)',
    scale: 'records',
    run: async (origin) => async () =>
      expectLength('first page', dataLength((await call(origin, 'GET', `${RECORDS_PATH}?_limit=100`, 200)).body), 100),
  },
  {
    label: 'middle page (100, Next-Page token)',
    scale: 'records',
    run: async (origin, { records }) => {
      const middle = Math.floor(records / 2);
      const token = Buffer.from(
        JSON.stringify({
          last_object: { last_modified: FIRST + middle },
          offset: records - middle,
          nonce: 'pagination-token-scale',
        }),
      ).toString('base64');
      const path = `${RECORDS_PATH}?_limit=100&_token=${encodeURIComponent(token)}`;
      return async () =>
        expectLength('middle page', dataLength((await call(origin, 'GET', path, 200)).body), Math.min(100, middle));
    },
  },
  {
    label: '304 poll (_since, If-None-Match)',
    scale: 'records',
    run: async (origin) => {
      const etag = (await call(origin, 'GET', `${RECORDS_PATH}?_limit=1`, 200)).headers.get('etag')!;
      const path = `${RECORDS_PATH}?_since=${etag.replaceAll('"', '')}`;
      return async () => void (await call(origin, 'GET', path, 304, { headers: { 'If-None-Match': etag } }));
    },
  },
  {
    label: 'count (HEAD, Total-Records)',
    scale: 'records',
    run: async (origin) => async () => {
      const total = Number((await call(origin, 'HEAD', RECORDS_PATH, 200)).headers.get('total-records'));
      if (!(total > 0)) throw new Error(`count: Total-Records ${total}`);
    },
  },
  ...(['n', 'm'] as const).flatMap((field): Row[] => {
    const which = field === 'n' ? 'declared index' : 'no index';
    return [
      {
        label: `filter gt_${field}= (10 of N, ${which})`,
        scale: 'records',
        run:
          async (origin, { records }) =>
          async () =>
            expectLength(
              `gt_${field}`,
              dataLength(
                (await call(origin, 'GET', `${RECORDS_PATH}?gt_${field}=${records - 11}&_limit=10`, 200)).body,
              ),
              10,
            ),
      },
      {
        label: `sort _sort=-${field}&_limit=10 (${which})`,
        scale: 'records',
        run:
          async (origin, { records }) =>
          async () => {
            const { body } = await call(origin, 'GET', `${RECORDS_PATH}?_sort=-${field}&_limit=10`, 200);
            const first = (body.data as Array<Record<string, number>>)[0]?.[field];
            if (first !== records - 1)
              throw new Error(`_sort=-${field}: the first record has ${field} = ${first}, not ${records - 1}`);
          },
      },
    ];
  }),
  {
    label: 'change monitor (GET, every collection)',
    scale: 'collections',
    // One page: every collection, up to storage_max_fetch_size (10,000) entries.
    run:
      async (origin, { collections }) =>
      async () =>
        expectLength(
          'monitor',
          dataLength((await call(origin, 'GET', '/v1/buckets/monitor/collections/changes/records', 200)).body),
          Math.min(collections + 1, 10_000),
        ),
  },
  {
    label: `GET /permissions (${ALICE_ENTRIES + 2} entries)`,
    scale: 'ACEs',
    run: async (origin) => async () =>
      expectLength(
        'permissions',
        dataLength((await call(origin, 'GET', '/v1/permissions', 200)).body),
        ALICE_ENTRIES + 2,
      ),
  },
  {
    label: 'POST one record',
    scale: 'records',
    run: async (origin) => async () =>
      void (await call(origin, 'POST', RECORDS_PATH, 201, { body: { data: { title: 'new', n: -1, m: -1 } } })),
  },
  {
    label: 'batch of 25 creations',
    scale: 'records',
    run: async (origin) => {
      const body = {
        defaults: { method: 'POST', path: `${ITEMS}/records` },
        requests: Array.from({ length: 25 }, (_, i) => ({
          body: { data: { title: 'batched', n: -1 - i, m: -1 - i } },
        })),
      };
      return async () => void (await call(origin, 'POST', '/v1/batch', 200, { body }));
    },
  },
];
