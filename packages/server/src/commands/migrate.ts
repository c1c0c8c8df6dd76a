/** What `quire migrate` prints: the migrations it applied, or that there were none to apply. */
export function migrationReport(applied: readonly string[], where: string): string {
  if (applied.length === 0) return `Already up to date (${where}): no migration to apply.`;
  return [
    `Applied ${applied.length} migration${applied.length > 1 ? 's' : ''} (${where}):`,
    ...applied.map((name) => `  ${name}`),
  ].join('\n');
}
