/**
 * Mail templates: `{name}` placeholders replaced by string or number values; unknown
 * placeholders stay as written (Kinto's formatter does the same), so a template never fails.
 */
export type TemplateValues = Record<string, unknown>;

export function renderTemplate(template: string, values: TemplateValues): string {
  return template.replace(/\{([^{}]+)\}/g, (placeholder, name: string) => {
    if (!Object.hasOwn(values, name)) return placeholder;
    const value = values[name];
    return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
      ? String(value)
      : placeholder;
  });
}

/** A subject is one header line: line breaks from client-supplied values become spaces. */
export function renderSubject(template: string, values: TemplateValues): string {
  return renderTemplate(template, values).replace(/[\r\n]+/g, ' ');
}
