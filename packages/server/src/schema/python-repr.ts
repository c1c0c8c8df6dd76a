/**
 * Python's `repr()` of a JSON value. Kinto's JSON-schema error descriptions come from the Python
 * `jsonschema` package, which quotes values with `repr` (`'x' is not of type 'integer'`); clients
 * and people compare those texts, so ours are built the same way.
 */

function reprString(text: string): string {
  // Python picks single quotes unless the text holds one and no double quote.
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = quote;
  for (const char of text) {
    const code = char.codePointAt(0) as number;
    if (char === '\\') out += '\\\\';
    else if (char === quote) out += `\\${quote}`;
    else if (char === '\n') out += '\\n';
    else if (char === '\r') out += '\\r';
    else if (char === '\t') out += '\\t';
    else if (code < 0x20 || (code >= 0x7f && code < 0xa0)) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else out += char;
  }
  return out + quote;
}

export function pythonRepr(value: unknown): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'string') return reprString(value);
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : 'nan';
  if (Array.isArray(value)) return `[${value.map(pythonRepr).join(', ')}]`;
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).map(
      ([key, item]) => `${reprString(key)}: ${pythonRepr(item)}`,
    );
    return `{${entries.join(', ')}}`;
  }
  return String(value);
}
