/**
 * The records of a collection: filters with the protocol's operators, sorting by any column,
 * `_fields`, and a virtualised table paged through Next-Page as it scrolls.
 */
import { useMemo, useState } from 'preact/hooks';
import type { KintoObject } from '@quire/client/admin';
import {
  type Filter,
  getPath,
  nextSort,
  type Operator,
  OPERATORS,
  parseListQuery,
  sortDirection,
  toSearchParams,
} from '../lib/filters.js';
import { formatCell, formatCount, formatTimestamp } from '../lib/format.js';
import { countLabel, type PagedList, type PagedState } from '../lib/paged-list.js';
import { href, navigate } from '../lib/router.js';
import { isPlainObject, type JsonSchema } from '../lib/schema.js';
import { PagedTable, TableRow } from './PagedTable.js';
import { onSubmit, Spinner } from './ui.js';

const ROW_HEIGHT = 40;

/** Columns: `_fields`, else the collection's `displayFields`, else the schema's, else what the records hold. */
function columnsFor(
  fields: string[],
  collection: KintoObject | null,
  schema: JsonSchema | null,
  items: KintoObject[],
): string[] {
  if (fields.length) return fields.filter((field) => field !== 'id' && field !== 'last_modified');
  if (Array.isArray(collection?.displayFields) && collection.displayFields.length)
    return (collection.displayFields as unknown[]).filter((field): field is string => typeof field === 'string');
  if (schema && isPlainObject(schema.properties)) {
    const names = Object.keys(schema.properties).filter((name) => !['id', 'last_modified', 'schema'].includes(name));
    if (names.length) return names.slice(0, 6);
  }
  const counts = new Map<string, number>();
  for (const item of items.slice(0, 100)) {
    for (const key of Object.keys(item))
      if (!['id', 'last_modified', 'schema'].includes(key)) counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, 6)
    .map(([key]) => key);
}

export function RecordsTable({
  bid,
  cid,
  query,
  state,
  list,
  collection,
  schema,
  selectedId,
  onReload,
  narrow,
}: {
  bid: string;
  cid: string;
  query: URLSearchParams;
  state: PagedState<KintoObject>;
  list: PagedList<KintoObject> | null;
  collection: KintoObject | null;
  schema: JsonSchema | null;
  selectedId: string | null;
  onReload: () => void;
  /** The record panel is open beside the table: fewer columns. */
  narrow?: boolean;
}) {
  const listQuery = useMemo(() => parseListQuery(query), [query]);
  const columns = useMemo(
    () => columnsFor(listQuery.fields, collection, schema, state.items),
    [listQuery.fields, collection, schema, state.items.length > 0],
  );
  const knownFields = useMemo(() => {
    const names = new Set<string>(['id', 'last_modified', ...columns]);
    if (schema && isPlainObject(schema.properties)) for (const name of Object.keys(schema.properties)) names.add(name);
    for (const item of state.items.slice(0, 50)) for (const key of Object.keys(item)) names.add(key);
    return [...names];
  }, [columns, schema, state.items.length > 0]);
  const [adding, setAdding] = useState(false);
  const [showFields, setShowFields] = useState(false);
  const template = `minmax(${narrow ? 90 : 150}px, 1.2fr) ${columns.map(() => `minmax(${narrow ? 80 : 120}px, 1fr)`).join(' ')}${narrow ? '' : ' 170px'}`;
  const minWidth = narrow ? 100 + columns.length * 90 : 150 + columns.length * 130 + 170;

  const apply = (next: { filters?: Filter[]; sort?: string[]; fields?: string[] }) => {
    navigate(href.collection(bid, cid, 'records', toSearchParams({ ...listQuery, ...next })));
  };

  const headerCell = (field: string, label: string) => {
    const direction = sortDirection(listQuery.sort, field);
    return (
      <span
        role="columnheader"
        aria-sort={direction === 'asc' ? 'ascending' : direction === 'desc' ? 'descending' : undefined}
      >
        <button
          type="button"
          class="sort-button"
          onClick={() => apply({ sort: nextSort(listQuery.sort, field) })}
          aria-label={`Sort by ${label}`}
          title={`Sort by ${label}`}
        >
          {label}
          <span class="sort-mark" aria-hidden="true">
            {direction === 'asc' ? '▲' : direction === 'desc' ? '▼' : ''}
          </span>
        </button>
      </span>
    );
  };

  return (
    <div class="records">
      <div class="toolbar wrap">
        <fieldset class="filter-chips" aria-label="Filters">
          {listQuery.filters.map((filter, index) => (
            <span key={index} class="chip">
              <span class="chip-field">{filter.field}</span>{' '}
              {OPERATORS.find((item) => item.op === filter.op)?.label ?? filter.op}{' '}
              <span class="chip-value">{filter.value}</span>
              <button
                type="button"
                class="chip-remove"
                aria-label={`Remove filter on ${filter.field}`}
                onClick={() => apply({ filters: listQuery.filters.filter((_, position) => position !== index) })}
              >
                ×
              </button>
            </span>
          ))}
          {listQuery.sort.length ? (
            <span class="chip subtle">
              sorted by {listQuery.sort.join(', ')}
              <button type="button" class="chip-remove" aria-label="Default order" onClick={() => apply({ sort: [] })}>
                ×
              </button>
            </span>
          ) : null}
          {listQuery.fields.length ? (
            <span class="chip subtle">
              fields: {listQuery.fields.join(', ')}
              <button type="button" class="chip-remove" aria-label="All fields" onClick={() => apply({ fields: [] })}>
                ×
              </button>
            </span>
          ) : null}
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
        <span class="muted small list-status" aria-live="polite">
          {countLabel(state, 'record')}
          {state.items.length > 0 && state.total !== null && state.items.length < state.total
            ? ` · ${formatCount(state.items.length)} loaded`
            : ''}
          {state.firstPageMs !== null ? ` · first page in ${state.firstPageMs} ms` : ''}
        </span>
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
          fields={knownFields}
          onAdd={(filter) => {
            setAdding(false);
            apply({ filters: [...listQuery.filters, filter] });
          }}
          onCancel={() => setAdding(false)}
        />
      ) : null}
      {showFields ? (
        <FieldsForm
          fields={knownFields}
          selected={listQuery.fields}
          onApply={(fields) => {
            setShowFields(false);
            apply({ fields });
          }}
        />
      ) : null}
      <PagedTable
        label={`Records of ${cid}`}
        class="table records-table"
        paged={[state, list]}
        template={template}
        ariaRowCount={(state.total ?? state.items.length) + 1}
        rowHeight={ROW_HEIGHT}
        minWidth={minWidth}
        resetKey={String(query)}
        header={
          <>
            {headerCell('id', 'id')}
            {columns.map((column) => headerCell(column, column))}
            {narrow ? null : headerCell('last_modified', 'last modified')}
          </>
        }
        empty={
          state.loading ? (
            <Spinner label="Loading records…" />
          ) : (
            <div class="muted">
              {listQuery.filters.length ? 'No record matches these filters.' : 'This collection has no record yet.'}
            </div>
          )
        }
        renderRow={(item, index) => (
          <RecordRow
            item={item}
            index={index}
            template={template}
            columns={columns}
            narrow={narrow}
            link={href.record(bid, cid, item.id, 'edit', query)}
            selected={item.id === selectedId}
          />
        )}
      />
    </div>
  );
}

function RecordRow({
  item,
  index,
  template,
  columns,
  narrow,
  link,
  selected,
}: {
  item: KintoObject;
  index: number;
  template: string;
  columns: string[];
  narrow: boolean | undefined;
  link: string;
  selected: boolean;
}) {
  return (
    <TableRow
      index={index}
      template={template}
      class={selected ? 'trow clickable selected' : 'trow clickable'}
      onClick={(event) => {
        // A pointer shortcut for the link of the first cell, which keyboard users reach.
        if ((event.target as HTMLElement).closest('a')) return;
        navigate(link);
      }}
    >
      <span role="cell" class="cell-id">
        <a href={link}>{item.id}</a>
      </span>
      {columns.map((column) => {
        const value = getPath(item, column);
        return (
          <span
            key={column}
            role="cell"
            class={typeof value === 'number' ? 'num' : value === undefined ? 'muted' : undefined}
            title={formatCell(value)}
          >
            {formatCell(value)}
          </span>
        );
      })}
      {narrow ? null : (
        <span role="cell" class="muted">
          {formatTimestamp(item.last_modified)}
        </span>
      )}
    </TableRow>
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
