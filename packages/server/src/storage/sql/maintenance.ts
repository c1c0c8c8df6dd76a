/**
 * What autovacuum does on PostgreSQL, for the embedded store: PGlite runs no autovacuum, so
 * without this its tables are never analysed. With no statistics the planner cannot tell the
 * primary key from the (scope, last_modified) index for a lookup by id, and picked the latter:
 * a get in a collection of 20,000 records read all of them (2.8 ms instead of 0.03 ms).
 *
 * After each committed write transaction the store calls `written(n)` with the objects it wrote;
 * once their number since the last run passes 50 + 10% of the stored rows (PostgreSQL's analyze
 * threshold and scale factor), one `VACUUM (ANALYZE)` of Quire's tables runs after that commit,
 * one at a time (on PGlite it waits for the open transaction, and the next ones wait while it
 * runs: ~20 ms for 20,000 rows, bounded by ANALYZE's sample). A store opened with tables never
 * analysed is analysed at once.
 */
import type { SqlDriver } from './drivers/types.js';

const ANALYZE_THRESHOLD = 50;
const ANALYZE_SCALE_FACTOR = 0.1;

export class EmbeddedMaintenance {
  readonly #driver: SqlDriver;
  #writes = 0;
  #threshold = ANALYZE_THRESHOLD;
  #running: Promise<void> | null = null;

  constructor(driver: SqlDriver) {
    this.#driver = driver;
  }

  /** Analyses at once a store whose tables never were (reltuples -1), else sets the threshold. */
  async start(): Promise<void> {
    const { rows, never } = await this.#tables();
    if (never) await this.run();
    else this.#threshold = ANALYZE_THRESHOLD + ANALYZE_SCALE_FACTOR * rows;
  }

  /** A write transaction that wrote `objects` objects committed. */
  written(objects: number): void {
    this.#writes += objects;
    if (this.#writes < this.#threshold || this.#running) return;
    // A failed run is tried again after the next write: the store works without it, only slower.
    this.#running = this.run()
      .catch(() => {})
      .finally(() => (this.#running = null));
  }

  /** Vacuums and analyses every table of the schema, then sets the next threshold. */
  async run(): Promise<void> {
    this.#writes = 0;
    const tables = await this.#driver.query<{ name: string }>(
      `SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()`,
    );
    if (tables.length === 0) return;
    // Names come from the catalog and are quoted, never user input.
    await this.#driver.exec(`VACUUM (ANALYZE) ${tables.map(({ name }) => `"${name.replace(/"/g, '""')}"`).join(', ')}`);
    this.#threshold = ANALYZE_THRESHOLD + ANALYZE_SCALE_FACTOR * (await this.#tables()).rows;
  }

  /** Rows stored in the schema's tables as last counted, and whether one never was. */
  async #tables(): Promise<{ rows: number; never: boolean }> {
    const [row] = await this.#driver.query<{ rows: number; never: boolean }>(
      `SELECT coalesce(sum(greatest(reltuples, 0)), 0)::float8 AS rows, coalesce(bool_or(reltuples < 0), false) AS never
       FROM pg_class WHERE relkind = 'r' AND relnamespace = current_schema()::regnamespace`,
    );
    return row ?? { rows: 0, never: false };
  }

  /** Resolves once no run is under way (before closing the store). */
  async idle(): Promise<void> {
    await this.#running;
  }
}
