/**
 * A JSON text editor: line numbers, the parse error with its line, Tab indents, Ctrl+S saves,
 * and a button to reformat.
 */
import { useLayoutEffect, useMemo, useRef } from 'preact/hooks';

interface JsonParse {
  value?: unknown;
  error?: string;
  line?: number;
}

export function parseJson(text: string): JsonParse {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch (error) {
    const message = (error as Error).message;
    // V8: "… at position 42 (line 3 column 5)" or "… at position 42"
    const lineMatch = /line (\d+)/.exec(message);
    const positionMatch = /position (\d+)/.exec(message);
    const line = lineMatch
      ? Number(lineMatch[1])
      : positionMatch
        ? text.slice(0, Number(positionMatch[1])).split('\n').length
        : undefined;
    return { error: message.replace(/^JSON\.parse: /, ''), ...(line ? { line } : {}) };
  }
}

export function JsonEditor({
  value,
  onChange,
  onSave,
  label,
  rows = 18,
  readOnly,
}: {
  value: string;
  onChange: (text: string) => void;
  onSave?: () => void;
  label: string;
  rows?: number;
  readOnly?: boolean;
}) {
  const area = useRef<HTMLTextAreaElement>(null);
  const gutter = useRef<HTMLDivElement>(null);
  const parsed = useMemo(() => parseJson(value), [value]);
  const lineCount = value.split('\n').length;

  useLayoutEffect(() => {
    if (gutter.current && area.current) gutter.current.scrollTop = area.current.scrollTop;
  });

  function onKeyDown(event: KeyboardEvent) {
    const target = event.currentTarget as HTMLTextAreaElement;
    if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === 's') {
      event.preventDefault();
      onSave?.();
      return;
    }
    if (event.key === 'Tab' && !event.shiftKey && !readOnly) {
      event.preventDefault();
      const { selectionStart, selectionEnd } = target;
      const next = `${value.slice(0, selectionStart)}  ${value.slice(selectionEnd)}`;
      onChange(next);
      requestAnimationFrame(() => target.setSelectionRange(selectionStart + 2, selectionStart + 2));
    }
  }

  return (
    <div class={parsed.error ? 'json-editor invalid' : 'json-editor'}>
      <JsonToolbar parsed={parsed} onFormat={readOnly ? null : onChange} />
      <div class="json-body" style={{ height: `${rows * 20 + 22}px` }}>
        <div class="json-gutter" ref={gutter} aria-hidden="true">
          {Array.from({ length: lineCount }, (_, index) => (
            <div key={index} class={parsed.line === index + 1 ? 'error-line' : undefined}>
              {index + 1}
            </div>
          ))}
        </div>
        <textarea
          ref={area}
          aria-label={label}
          class="json-text"
          rows={rows}
          value={value}
          readOnly={readOnly}
          spellcheck={false}
          autocomplete="off"
          onInput={(event) => onChange(event.currentTarget.value)}
          onScroll={() => {
            if (gutter.current && area.current) gutter.current.scrollTop = area.current.scrollTop;
          }}
          onKeyDown={onKeyDown}
          wrap="off"
        />
      </div>
    </div>
  );
}

/** Whether the text parses (or where it does not), and a button to reformat it when it may be edited. */
function JsonToolbar({ parsed, onFormat }: { parsed: JsonParse; onFormat: ((text: string) => void) | null }) {
  return (
    <div class="json-toolbar">
      <span class={parsed.error ? 'json-status bad' : 'json-status ok'} role={parsed.error ? 'alert' : undefined}>
        {parsed.error ? `Invalid JSON${parsed.line ? ` on line ${parsed.line}` : ''}: ${parsed.error}` : 'Valid JSON'}
      </span>
      {onFormat ? (
        <button
          type="button"
          class="button ghost small"
          disabled={Boolean(parsed.error)}
          onClick={() => onFormat(JSON.stringify(parsed.value, null, 2))}
        >
          Format
        </button>
      ) : null}
    </div>
  );
}
