/**
 * Above the records: the query's filters, order and fields as removable chips, the forms that
 * add a filter or choose the fields, how many records there are, and a reload button.
 */
import type { KintoObject } from '@quire/client/admin';
import { useState } from 'preact/hooks';
import { type Filter, type ListQuery, type Operator, OPERATORS } from '../lib/filters.js';
import { formatCount } from '../lib/format.js';
import { countLabel, type PagedState } from '../lib/paged-list.js';
import { onSubmit } from './ui.js';

export type Apply = (next: { filters?: Filter[]; sort?: string[]; fields?: string[] }) => void;

export function QueryBar({
  state,
  query,
  apply,
  fields,
  onReload,
}: {
  state: PagedState<KintoObject>;
  query: ListQuery;
  apply: Apply;
  /** Field names to suggest. */
  fields: string[];
  onReload: () => void;
}) {
  const [adding, setAdding] = useState(false);
  const [showFields, setShowFields] = useState(false);
  return (
    <>
      <div class="toolbar wrap">
        <fieldset class="filter-chips" aria-label="Filters">
          <QueryChips query={query} apply={apply} />
          <button type="button" class="button ghost small" aria-expanded={adding} onClick={() => setAdding(!adding)}>
            + Filter
          </button>
          <button
            type="button"
            class="button ghost small"
            aria-expanded={showFields}
            onClick={() => setShowFields(!showFields)}
          >
            Fields
          </button>
        </fieldset>
        <span class="toolbar-spacer" />
        <ListStatus state={state} />
        <button
          type="button"
          class="button ghost small"
          onClick={onReload}
          aria-label="Reload the records"
          title="Reload"
        >
          ↻
        </button>
      </div>
      {adding ? (
        <FilterForm
          fields={fields}
          onAdd={(filter) => {
            setAdding(false);
            apply({ filters: [...query.filters, filter] });
          }}
          onCancel={() => setAdding(false)}
        />
      ) : null}
      {showFields ? (
        <FieldsForm
          fields={fields}
          selected={query.fields}
          onApply={(fields) => {
            setShowFields(false);
            apply({ fields });
          }}
        />
      ) : null}
    </>
  );
}

/** The query's filters, order and fields as chips, each removable. */
function QueryChips({ query, apply }: { query: ListQuery; apply: Apply }) {
  return (
    <>
      {query.filters.map((filter, index) => (
        <span key={index} class="chip">
          <span class="chip-field">{filter.field}</span>{' '}
          {OPERATORS.find((item) => item.op === filter.op)?.label ?? filter.op}{' '}
          <span class="chip-value">{filter.value}</span>
          <button
            type="button"
            class="chip-remove"
            aria-label={`Remove filter on ${filter.field}`}
            onClick={() => apply({ filters: query.filters.filter((_, position) => position !== index) })}
          >
            ×
          </button>
        </span>
      ))}
      {query.sort.length ? (
        <span class="chip subtle">
          sorted by {query.sort.join(', ')}
          <button type="button" class="chip-remove" aria-label="Default order" onClick={() => apply({ sort: [] })}>
            ×
          </button>
        </span>
      ) : null}
      {query.fields.length ? (
        <span class="chip subtle">
          fields: {query.fields.join(', ')}
          <button type="button" class="chip-remove" aria-label="All fields" onClick={() => apply({ fields: [] })}>
            ×
          </button>
        </span>
      ) : null}
    </>
  );
}

/** How many records, how many loaded, how fast the first page came. */
function ListStatus({ state }: { state: PagedState<KintoObject> }) {
  return (
    <span class="muted small list-status" aria-live="polite">
      {countLabel(state, 'record')}
      {state.items.length > 0 && state.total !== null && state.items.length < state.total
        ? ` · ${formatCount(state.items.length)} loaded`
        : ''}
      {state.firstPageMs !== null ? ` · first page in ${state.firstPageMs} ms` : ''}
    </span>
  );
}

function FilterForm({
  fields,
  onAdd,
  onCancel,
}: {
  fields: string[];
  onAdd: (filter: Filter) => void;
  onCancel: () => void;
}) {
  const [field, setField] = useState(fields.find((name) => name !== 'id' && name !== 'last_modified') ?? 'id');
  const [op, setOp] = useState<Operator>('eq');
  const [value, setValue] = useState(op === 'has' ? 'true' : '');
  const info = OPERATORS.find((item) => item.op === op)!;
  return (
    <form
      class="filter-form"
      aria-label="New filter"
      onSubmit={onSubmit(() => field.trim() && value.trim() && onAdd({ field: field.trim(), op, value }))}
    >
      <label class="field inline">
        <span class="field-label">Field</span>
        <input
          list="filter-fields"
          value={field}
          onInput={(event) => setField(event.currentTarget.value)}
          spellcheck={false}
          pattern="[\w.]+"
          required
        />
      </label>
      <datalist id="filter-fields">
        {fields.map((name) => (
          <option key={name} value={name} />
        ))}
      </datalist>
      <label class="field inline">
        <span class="field-label">Operator</span>
        <select
          value={op}
          onChange={(event) => {
            const next = event.currentTarget.value as Operator;
            setOp(next);
            if (next === 'has') setValue('true');
          }}
        >
          {OPERATORS.map((item) => (
            <option key={item.op} value={item.op} title={item.hint}>
              {item.label}
            </option>
          ))}
        </select>
      </label>
      {/* biome-ignore lint/a11y/noLabelWithoutControl: the label holds its control, a select or an input */}
      <label class="field inline grow">
        <span class="field-label">Value</span>
        {op === 'has' ? (
          <select value={value} onChange={(event) => setValue(event.currentTarget.value)}>
            <option value="true">present</option>
            <option value="false">absent</option>
          </select>
        ) : (
          <input
            value={value}
            onInput={(event) => setValue(event.currentTarget.value)}
            spellcheck={false}
            required
            placeholder={info.hint}
          />
        )}
      </label>
      <button type="submit" class="button small">
        Apply filter
      </button>
      <button type="button" class="button ghost small" onClick={onCancel}>
        Cancel
      </button>
      <span class="muted small filter-hint">{info.hint}</span>
    </form>
  );
}

function FieldsForm({
  fields,
  selected,
  onApply,
}: {
  fields: string[];
  selected: string[];
  onApply: (fields: string[]) => void;
}) {
  const [chosen, setChosen] = useState<string[]>(selected);
  const [extra, setExtra] = useState('');
  const candidates = fields.filter((field) => field !== 'id' && field !== 'last_modified');
  return (
    <form
      class="filter-form"
      aria-label="Fields"
      onSubmit={onSubmit(() =>
        onApply([
          ...chosen,
          ...extra
            .split(',')
            .map((item) => item.trim())
            .filter(Boolean),
        ]),
      )}
    >
      <span class="muted small">Only read these fields (_fields; id and last_modified always come):</span>
      {candidates.map((field) => (
        <label key={field} class="checkbox small">
          <input
            type="checkbox"
            checked={chosen.includes(field)}
            onChange={(event) =>
              setChosen(event.currentTarget.checked ? [...chosen, field] : chosen.filter((item) => item !== field))
            }
          />
          {field}
        </label>
      ))}
      <input
        class="small-input"
        placeholder="other.field, …"
        value={extra}
        onInput={(event) => setExtra(event.currentTarget.value)}
        aria-label="Other fields"
      />
      <button type="submit" class="button small">
        Apply
      </button>
    </form>
  );
}
