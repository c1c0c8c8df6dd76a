/**
 * The protocol's list filters (`<operator>_<field>=<value>`, §7.1), written once: tools that build
 * or read filtered URLs (the Quire Console) import this list rather than keep their own.
 */

/** Every filter prefix, in the order the server tries them: `contains_any_x` is contains_any on x, not contains. */
export const FILTER_OPERATORS = [
  'lt',
  'min',
  'max',
  'not',
  'eq',
  'gt',
  'in',
  'exclude',
  'like',
  'has',
  'contains_any',
  'contains',
] as const;

export type FilterOperator = (typeof FILTER_OPERATORS)[number];

/** `min_n` → `{ operator: 'min', field: 'n' }`; a bare name is `eq`; null when `field` is not a field name. */
export function parseFilterName(name: string): { operator: FilterOperator; field: string } | null {
  const field = /^[\w.]+$/;
  for (const operator of FILTER_OPERATORS) {
    if (name.startsWith(`${operator}_`) && field.test(name.slice(operator.length + 1)))
      return { operator, field: name.slice(operator.length + 1) };
  }
  return field.test(name) ? { operator: 'eq', field: name } : null;
}
