/**
 * A form generated from a collection's JSON schema: a field per property, typed inputs for
 * strings, numbers, booleans, enums, dates, lists and nested objects; what the form cannot
 * represent (oneOf, anyOf, untyped values) gets a small JSON box. Fields the schema does not
 * describe are kept as they are. Errors come from the same validation the server runs.
 */
import { useEffect, useState } from 'preact/hooks';
import { isPlainObject, type JsonSchema, mainType, resolveRef, type SchemaError } from '../lib/schema.js';
import { EnumSelect, NumberInput, TextInput } from './ScalarInputs.js';
import { FormError } from './ui.js';

interface FieldProps {
  name: string;
  label: string;
  schema: JsonSchema;
  root: JsonSchema;
  value: unknown;
  onChange: (value: unknown) => void;
  required: boolean;
  pointer: string;
  errors: SchemaError[];
  readOnly?: boolean;
  /** An item of a list: its label is for assistive technology only. */
  compact?: boolean;
}

const errorFor = (errors: SchemaError[], pointer: string) =>
  errors.find((error) => error.path === pointer)?.message ?? null;

function Help({ schema, error }: { schema: JsonSchema; error: string | null }) {
  if (error) return <span class="field-error">{error}</span>;
  return typeof schema.description === 'string' ? <span class="field-hint">{schema.description}</span> : null;
}

function Label({ label, required, compact }: { label: string; required: boolean; compact?: boolean }) {
  if (compact) return <span class="visually-hidden">{label}</span>;
  return (
    <span class="field-label">
      {label}
      {required ? (
        <span class="required">
          <span aria-hidden="true"> *</span>
          <span class="visually-hidden"> required</span>
        </span>
      ) : null}
    </span>
  );
}

function titleOf(schema: JsonSchema, name: string): string {
  return typeof schema.title === 'string' ? schema.title : name;
}

/** A value the form has no widget for, as JSON. */
function JsonValueField(props: FieldProps) {
  const [text, setText] = useState(() => (props.value === undefined ? '' : JSON.stringify(props.value, null, 2)));
  const [invalid, setInvalid] = useState(false);
  useEffect(() => {
    const current =
      text.trim() === ''
        ? undefined
        : (() => {
            try {
              return JSON.parse(text) as unknown;
            } catch {
              return Symbol.for('invalid');
            }
          })();
    if (JSON.stringify(current) !== JSON.stringify(props.value))
      setText(props.value === undefined ? '' : JSON.stringify(props.value, null, 2));
  }, [props.value]);
  const error = invalid ? 'Not valid JSON' : errorFor(props.errors, props.pointer);
  return (
    <div class={error ? 'field has-error' : 'field'}>
      <label class="field-control">
        <Label label={props.label} required={props.required} compact={props.compact} />
        <textarea
          class="code-input"
          rows={Math.min(8, Math.max(2, text.split('\n').length))}
          value={text}
          readOnly={props.readOnly}
          spellcheck={false}
          onInput={(event) => {
            const next = event.currentTarget.value;
            setText(next);
            if (next.trim() === '') {
              setInvalid(false);
              props.onChange(undefined);
              return;
            }
            try {
              props.onChange(JSON.parse(next));
              setInvalid(false);
            } catch {
              setInvalid(true);
            }
          }}
        />
      </label>
      {error ? (
        <span class="field-error">{error}</span>
      ) : (
        <span class="field-hint">
          {typeof props.schema.description === 'string' ? `${props.schema.description} · ` : ''}JSON value
        </span>
      )}
    </div>
  );
}

function ScalarField(props: FieldProps & { type: string }) {
  const { schema, value, onChange, type, readOnly } = props;
  const error = errorFor(props.errors, props.pointer);
  const enumValues = Array.isArray(schema.enum) ? schema.enum : null;
  if (!enumValues && type === 'boolean') {
    return (
      <div class={error ? 'field has-error' : 'field'}>
        <label class="checkbox">
          <input
            type="checkbox"
            disabled={readOnly}
            checked={value === true}
            onChange={(event) => onChange(event.currentTarget.checked)}
          />
          {props.label}
          {props.required ? <span class="required"> *</span> : null}
        </label>
        <Help schema={schema} error={error} />
      </div>
    );
  }
  const common = { value, onChange, readOnly, required: props.required };
  const input = enumValues ? (
    <EnumSelect {...common} values={enumValues} />
  ) : type === 'number' || type === 'integer' ? (
    <NumberInput {...common} schema={schema} integer={type === 'integer'} />
  ) : (
    <TextInput {...common} schema={schema} />
  );
  return (
    <div class={error ? 'field has-error' : 'field'}>
      {/* biome-ignore lint/a11y/noLabelWithoutControl: the label holds its control, `input` above */}
      <label class="field-control">
        <Label label={props.label} required={props.required} compact={props.compact} />
        {input}
      </label>
      <Help schema={schema} error={error} />
    </div>
  );
}

/** An empty item of a type, for a list's "add" button. */
function blankOf(type: string | undefined): unknown {
  if (type === 'object') return {};
  if (type === 'array') return [];
  if (type === 'boolean') return false;
  return type === 'number' || type === 'integer' ? 0 : '';
}

/** A list whose items are among `choices`: a checkbox each. */
function ChoicesField(props: FieldProps & { items: unknown[]; choices: unknown[]; error: string | null }) {
  const { items, choices, error } = props;
  return (
    <fieldset class={error ? 'fieldset has-error' : 'fieldset'}>
      <legend>
        <Label label={props.label} required={props.required} />
      </legend>
      <div class="choices">
        {choices.map((choice, index) => {
          const checked = items.some((item) => JSON.stringify(item) === JSON.stringify(choice));
          return (
            <label key={index} class="checkbox">
              <input
                type="checkbox"
                disabled={props.readOnly}
                checked={checked}
                onChange={(event) =>
                  props.onChange(
                    event.currentTarget.checked
                      ? [...items, choice]
                      : items.filter((item) => JSON.stringify(item) !== JSON.stringify(choice)),
                  )
                }
              />
              {typeof choice === 'string' ? choice : JSON.stringify(choice)}
            </label>
          );
        })}
      </div>
      <Help schema={props.schema} error={error} />
    </fieldset>
  );
}

function ArrayField(props: FieldProps) {
  const items = Array.isArray(props.value) ? props.value : [];
  const itemSchema = isPlainObject(props.schema.items) ? resolveRef(props.schema.items as JsonSchema, props.root) : {};
  const error = errorFor(props.errors, props.pointer);
  // A list of choices: checkboxes.
  if (Array.isArray(itemSchema.enum))
    return <ChoicesField {...props} items={items} choices={itemSchema.enum as unknown[]} error={error} />;
  const blank = blankOf(mainType(itemSchema));
  return (
    <fieldset class={error ? 'fieldset has-error' : 'fieldset'}>
      <legend>
        <Label label={props.label} required={props.required} />
      </legend>
      {items.length === 0 ? <p class="muted small">No item.</p> : null}
      <ol class="array-items">
        {items.map((item, index) => (
          <li key={index}>
            <SchemaField
              name={String(index)}
              label={`${props.label} ${index + 1}`}
              compact={!['object', 'array'].includes(mainType(itemSchema) ?? '')}
              schema={itemSchema}
              root={props.root}
              value={item}
              required
              pointer={`${props.pointer}/${index}`}
              errors={props.errors}
              readOnly={props.readOnly}
              onChange={(next) =>
                props.onChange(items.map((current, position) => (position === index ? next : current)))
              }
            />
            {!props.readOnly ? (
              <button
                type="button"
                class="button ghost small"
                aria-label={`Remove ${props.label} item ${index + 1}`}
                onClick={() => props.onChange(items.filter((_, position) => position !== index))}
              >
                Remove
              </button>
            ) : null}
          </li>
        ))}
      </ol>
      {!props.readOnly ? (
        <button
          type="button"
          class="button secondary small add-item"
          aria-label={`Add an item to ${props.label}`}
          onClick={() => props.onChange([...items, blank])}
        >
          + Add {typeof itemSchema.title === 'string' ? itemSchema.title.toLowerCase() : 'item'}
        </button>
      ) : null}
      <Help schema={props.schema} error={error} />
    </fieldset>
  );
}

function ObjectField(props: FieldProps) {
  const value = isPlainObject(props.value) ? props.value : {};
  const error = errorFor(props.errors, props.pointer);
  return (
    <fieldset class={error ? 'fieldset has-error' : 'fieldset'}>
      <legend>
        <Label label={props.label} required={props.required} />
      </legend>
      <ObjectFields
        schema={props.schema}
        root={props.root}
        value={value}
        onChange={props.onChange}
        pointer={props.pointer}
        errors={props.errors}
        readOnly={props.readOnly}
      />
      <Help schema={props.schema} error={error} />
    </fieldset>
  );
}

function SchemaField(props: FieldProps) {
  const schema = resolveRef(props.schema, props.root);
  const type = mainType(schema);
  const complex = ['oneOf', 'anyOf', 'allOf', 'not', 'if'].some((keyword) => keyword in schema);
  if (complex || type === undefined || type === 'null') return <JsonValueField {...props} schema={schema} />;
  if (type === 'array') return <ArrayField {...props} schema={schema} />;
  if (type === 'object')
    return isPlainObject(schema.properties) ? (
      <ObjectField {...props} schema={schema} />
    ) : (
      <JsonValueField {...props} schema={schema} />
    );
  return <ScalarField {...props} schema={schema} type={type} />;
}

function ObjectFields({
  schema,
  root,
  value,
  onChange,
  pointer,
  errors,
  readOnly,
  skip = [],
}: {
  schema: JsonSchema;
  root: JsonSchema;
  value: Record<string, unknown>;
  onChange: (value: Record<string, unknown>) => void;
  pointer: string;
  errors: SchemaError[];
  readOnly?: boolean;
  skip?: string[];
}) {
  const properties = isPlainObject(schema.properties) ? (schema.properties as Record<string, JsonSchema>) : {};
  const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
  return (
    <div class="form-fields">
      {Object.entries(properties)
        .filter(([name]) => !skip.includes(name))
        .map(([name, property]) => (
          <SchemaField
            key={name}
            name={name}
            label={titleOf(resolveRef(property, root), name)}
            schema={property}
            root={root}
            value={value[name]}
            required={required.includes(name)}
            pointer={`${pointer}/${name}`}
            errors={errors}
            readOnly={readOnly}
            onChange={(next) => {
              const copy = { ...value };
              if (next === undefined) delete copy[name];
              else copy[name] = next;
              onChange(copy);
            }}
          />
        ))}
    </div>
  );
}

export function SchemaForm({
  schema,
  value,
  onChange,
  errors,
  readOnly,
}: {
  schema: JsonSchema;
  value: Record<string, unknown>;
  onChange: (value: Record<string, unknown>) => void;
  errors: SchemaError[];
  readOnly?: boolean;
}) {
  const properties = isPlainObject(schema.properties) ? Object.keys(schema.properties) : [];
  const skip = ['id', 'last_modified', 'schema'];
  const others = Object.keys(value).filter((key) => !properties.includes(key) && !skip.includes(key));
  const wholeError = errors.find((error) => error.path === '');
  return (
    <div class="schema-form">
      {typeof schema.title === 'string' || typeof schema.description === 'string' ? (
        <div class="schema-intro">
          {typeof schema.title === 'string' ? <strong>{schema.title}</strong> : null}
          {typeof schema.description === 'string' ? <p class="muted small">{schema.description}</p> : null}
        </div>
      ) : null}
      <ObjectFields
        schema={schema}
        root={schema}
        value={value}
        onChange={onChange}
        pointer=""
        errors={errors}
        readOnly={readOnly}
        skip={skip}
      />
      {others.length ? (
        <p class="muted small">
          Also in this record, outside the schema: {others.join(', ')} (kept as they are; edit them in JSON).
        </p>
      ) : null}
      <FormError error={wholeError?.message} />
    </div>
  );
}
