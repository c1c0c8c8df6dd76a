// Preloaded into a server process (`NODE_OPTIONS=--import …`) by tests that count its database
// statements: every statement the pg driver sends is appended, one line each, to the file named
// by QUIRE_TEST_STATEMENT_LOG (pg_stat_statements is not available everywhere), cut at
// QUIRE_TEST_STATEMENT_LOG_WIDTH characters (default 160).
import { appendFileSync } from 'node:fs';
import pg from 'pg';

const file = process.env.QUIRE_TEST_STATEMENT_LOG;
const width = Number(process.env.QUIRE_TEST_STATEMENT_LOG_WIDTH ?? 160);
if (file) {
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function logged(config, ...rest) {
    const text = typeof config === 'string' ? config : config?.text;
    if (typeof text === 'string') appendFileSync(file, `${text.replace(/\s+/g, ' ').slice(0, width)}\n`);
    return query.call(this, config, ...rest);
  };
}
