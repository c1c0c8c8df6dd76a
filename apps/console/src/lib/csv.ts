/**
 * CSV as spreadsheets write it (RFC 4180): quoted fields with doubled quotes, line breaks inside
 * quotes, CRLF or LF, a byte-order mark; the separator (comma, semicolon or tab) is guessed from
 * the header line.
 */

function detectDelimiter(text: string): string {
  let line = '';
  let quoted = false;
  for (const char of text) {
    if (char === '"') quoted = !quoted;
    if (!quoted && (char === '\n' || char === '\r')) break;
    if (!quoted) line += char;
  }
  const counts = [',', ';', '\t'].map((delimiter) => [delimiter, line.split(delimiter).length - 1] as const);
  counts.sort((a, b) => b[1] - a[1]);
  return counts[0]![1] > 0 ? counts[0]![0] : ',';
}

/** Rows of cells; blank lines are skipped. */
export function parseCsv(input: string, delimiter = detectDelimiter(input)): string[][] {
  const text = input.replace(/^\uFEFF/, '');
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  let i = 0;
  const endRow = () => {
    row.push(cell);
    if (!(row.length === 1 && row[0] === '')) rows.push(row);
    row = [];
    cell = '';
  };
  while (i < text.length) {
    const char = text[i]!;
    if (quoted) {
      if (char === '"') {
        if (text[i + 1] === '"') {
          cell += '"';
          i += 2;
          continue;
        }
        quoted = false;
      } else cell += char;
      i++;
      continue;
    }
    if (char === '"' && cell === '') quoted = true;
    else if (char === delimiter) {
      row.push(cell);
      cell = '';
    } else if (char === '\n' || char === '\r') {
      endRow();
      if (char === '\r' && text[i + 1] === '\n') i++;
    } else cell += char;
    i++;
  }
  if (cell !== '' || row.length) endRow();
  return rows;
}

function quote(value: string, delimiter: string): string {
  return /["\n\r]/.test(value) || value.includes(delimiter) ? `"${value.replace(/"/g, '""')}"` : value;
}

export function toCsv(rows: string[][], delimiter = ','): string {
  return `${rows.map((row) => row.map((cell) => quote(cell, delimiter)).join(delimiter)).join('\r\n')}\r\n`;
}
