/** The machine-readable report: the `RunReport` model as it is (see model.ts for its fields). */
import type { RunReport } from './model.js';

export function toJson(report: RunReport): string {
  return `${JSON.stringify(report, null, 2)}\n`;
}
