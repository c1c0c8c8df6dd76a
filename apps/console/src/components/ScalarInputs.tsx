/** The input of one scalar value of a schema: a choice among its `enum`, a number, or text in its `format`. */
import type { JsonSchema } from '../lib/schema.js';

interface ScalarInputProps {
  value: unknown;
  onChange: (value: unknown) => void;
  readOnly: boolean | undefined;
  required: boolean;
}

export function EnumSelect({ values, value, onChange, readOnly, required }: ScalarInputProps & { values: unknown[] }) {
  const index = values.findIndex((candidate) => JSON.stringify(candidate) === JSON.stringify(value));
  return (
    <select
      disabled={readOnly}
      value={index === -1 ? '' : String(index)}
      onChange={(event) =>
        onChange(event.currentTarget.value === '' ? undefined : values[Number(event.currentTarget.value)])
      }
    >
      <option value="">{required ? 'Choose…' : '(none)'}</option>
      {values.map((candidate, candidateIndex) => (
        <option key={candidateIndex} value={String(candidateIndex)}>
          {typeof candidate === 'string' ? candidate : JSON.stringify(candidate)}
        </option>
      ))}
    </select>
  );
}

export function NumberInput({
  schema,
  integer,
  value,
  onChange,
  readOnly,
}: ScalarInputProps & { schema: JsonSchema; integer: boolean }) {
  return (
    <input
      type="number"
      step={integer ? 1 : 'any'}
      min={typeof schema.minimum === 'number' ? schema.minimum : undefined}
      max={typeof schema.maximum === 'number' ? schema.maximum : undefined}
      readOnly={readOnly}
      value={typeof value === 'number' ? String(value) : ''}
      onInput={(event) => {
        const text = event.currentTarget.value;
        onChange(text === '' ? undefined : Number(text));
      }}
    />
  );
}

/** `date-time` values are ISO strings; the input shows and takes them in local time. */
function toLocalInput(text: string): string {
  const local = text ? new Date(text) : null;
  return local && Number.isFinite(local.getTime())
    ? new Date(local.getTime() - local.getTimezoneOffset() * 60000).toISOString().slice(0, 16)
    : '';
}

export function TextInput({ schema, value, onChange, readOnly, required }: ScalarInputProps & { schema: JsonSchema }) {
  const text = typeof value === 'string' ? value : value === undefined || value === null ? '' : String(value);
  const set = (next: string) => onChange(next === '' && !required ? undefined : next);
  const format = typeof schema.format === 'string' ? schema.format : '';
  const maxLength = typeof schema.maxLength === 'number' ? schema.maxLength : undefined;
  const long =
    (maxLength !== undefined && maxLength > 120) || format === 'textarea' || text.length > 80 || text.includes('\n');
  if (format === 'date')
    return <input type="date" readOnly={readOnly} value={text} onInput={(event) => set(event.currentTarget.value)} />;
  if (format === 'date-time')
    return (
      <input
        type="datetime-local"
        readOnly={readOnly}
        value={toLocalInput(text)}
        onInput={(event) => set(event.currentTarget.value ? new Date(event.currentTarget.value).toISOString() : '')}
      />
    );
  if (long)
    return (
      <textarea
        rows={4}
        readOnly={readOnly}
        value={text}
        maxLength={maxLength}
        onInput={(event) => set(event.currentTarget.value)}
      />
    );
  return (
    <input
      type={(format === 'email' ? 'email' : format === 'uri' || format === 'url' ? 'url' : 'text') as 'text'}
      readOnly={readOnly}
      value={text}
      maxLength={maxLength}
      onInput={(event) => set(event.currentTarget.value)}
    />
  );
}
