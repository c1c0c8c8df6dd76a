/** The throughput bench's table (one row per workload, one column per server) and its JSON rows. */
import { formatNumber } from '../support.js';
import { type Measure, percent, type ServerName, TARGETS, WORKLOAD_NAMES, type WorkloadKey } from './config.js';

export type Results = Map<ServerName, Map<WorkloadKey, Measure>>;

const TITLES: Record<ServerName, string> = {
  ceiling: 'ceiling req/s · p50/p99 ms',
  postgresql: 'postgresql req/s (% of ceiling) · p50/p99 ms',
  embedded: 'embedded req/s (% of ceiling, % of postgresql) · p50/p99 ms',
  pglite: 'pglite req/s (% of ceiling, % of postgresql) · p50/p99 ms',
  observed: 'observed req/s (% of ceiling, % of postgresql) · p50/p99 ms',
  pooled: 'pooled req/s (% of ceiling, % of postgresql) · p50/p99 ms',
  pgbouncer: 'pgbouncer req/s (% of ceiling, % of postgresql) · p50/p99 ms',
  polled: 'polled req/s (% of ceiling, % of postgresql) · p50/p99 ms',
};

/**
 * Prints the table under `header`: ratios to the ceiling (and, for the other servers, to
 * postgresql), then why servers were skipped. Returns one JSON row per server and workload.
 */
export function printTable(
  header: string,
  servers: ServerName[],
  keys: WorkloadKey[],
  results: Results,
  skipped: Map<ServerName, string>,
): Array<Record<string, unknown>> {
  const json: Array<Record<string, unknown>> = [];
  const rows = keys.map((key) => {
    const ceiling = results.get('ceiling')?.get(key);
    const postgresql = results.get('postgresql')?.get(key);
    const cells = servers.map((server) => {
      const result = results.get(server)?.get(key);
      if (!result) return 'skipped';
      json.push(jsonRow(server, key, result, ceiling, postgresql));
      return cell(server, result, ceiling, postgresql);
    });
    return [WORKLOAD_NAMES[key], ...cells, targetCell(key, ceiling, postgresql, results.get('embedded')?.get(key))];
  });
  const table = [
    ['workload', ...servers.map((server) => TITLES[server]), 'target: postgresql ≥ · embedded ≥ postgresql'],
    ...rows,
  ];
  const widths = table[0]!.map((_, column) => Math.max(...table.map((row) => row[column]!.length)));
  const pad = (cell: string, column: number) =>
    column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!);
  const line = (row: string[]) => `| ${row.map(pad).join(' | ')} |`;
  console.log(`\n${header}\n`);
  console.log(line(table[0]!));
  console.log(`|${widths.map((width, column) => `${'-'.repeat(width + 1)}${column === 0 ? '-' : ':'}`).join('|')}|`);
  for (const row of rows) console.log(line(row));
  for (const [server, reason] of skipped) console.log(`\n${server} skipped: ${reason}`);
  return json;
}

/** req/s (records/s), its ratios, p50/p99. */
function cell(server: ServerName, result: Measure, ceiling?: Measure, postgresql?: Measure): string {
  const rps = result.requestsPerSecond;
  const ratios = [
    server !== 'ceiling' && ceiling ? percent(rps, ceiling.requestsPerSecond) : null,
    server !== 'ceiling' && server !== 'postgresql' && postgresql
      ? `${percent(rps, postgresql.requestsPerSecond)} of postgresql`
      : null,
  ].filter((ratio) => ratio !== null);
  const records = result.recordsPerSecond ? ` = ${formatNumber(result.recordsPerSecond)} records/s` : '';
  const ratioText = ratios.length > 0 ? ` (${ratios.join(', ')})` : '';
  return `${formatNumber(rps)}${records}${ratioText} · ${result.p50}/${result.p99}`;
}

function jsonRow(
  server: ServerName,
  key: WorkloadKey,
  result: Measure,
  ceiling?: Measure,
  postgresql?: Measure,
): Record<string, unknown> {
  const rps = result.requestsPerSecond;
  return {
    server,
    workload: key,
    name: WORKLOAD_NAMES[key],
    requestsPerSecond: rps,
    ...(result.recordsPerSecond ? { recordsPerSecond: result.recordsPerSecond } : {}),
    p50: result.p50,
    p99: result.p99,
    ...(result.serverCpuMs === undefined
      ? {}
      : { serverCpuMsPerRequest: result.serverCpuMs, postgresCpuMsPerRequest: result.postgresCpuMs }),
    ...(server !== 'ceiling' && ceiling ? { ofCeiling: rps / ceiling.requestsPerSecond } : {}),
    ...(server !== 'ceiling' && server !== 'postgresql' && postgresql
      ? { ofPostgresql: rps / postgresql.requestsPerSecond }
      : {}),
  };
}

/** Whether the run met a workload's target (blank without a ceiling in the same run). */
function targetCell(
  key: WorkloadKey,
  ceiling: Measure | undefined,
  postgresql: Measure | undefined,
  embedded: Measure | undefined,
): string {
  const target = TARGETS[key];
  if (!ceiling) return percent(target, 1);
  const verdict = (measure: Measure | undefined, floor: number) =>
    measure ? (measure.requestsPerSecond >= floor ? 'met' : 'not met') : '–';
  const postgresFloor = target * ceiling.requestsPerSecond;
  const embeddedFloor = Math.max(postgresFloor, postgresql?.requestsPerSecond ?? 0);
  return `${percent(target, 1)}: ${verdict(postgresql, postgresFloor)} · ${verdict(embedded, embeddedFloor)}`;
}
