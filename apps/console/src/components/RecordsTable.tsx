/**
 * The records of a collection: filters with the protocol's operators, sorting by any column,
 * `_fields`, and a virtualised table paged through Next-Page as it scrolls.
 */
import { useMemo } from 'preact/hooks';
import type { KintoObject } from '@quire/client/admin';
import { getPath, nextSort, parseListQuery, sortDirection, toSearchParams } from '../lib/filters.js';
import { formatCell, formatTimestamp } from '../lib/format.js';
import type { PagedList, PagedState } from '../lib/paged-list.js';
import { href, navigate } from '../lib/router.js';
import { isPlainObject, type JsonSchema } from '../lib/schema.js';
import { PagedTable, TableRow } from './PagedTable.js';
import { type Apply, QueryBar } from './QueryBar.js';
import { Spinner } from './ui.js';

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

/** Field names a filter may name: the columns, the schema's, and what the first records hold. */
function fieldsToSuggest(columns: string[], schema: JsonSchema | null, items: KintoObject[]): string[] {
  const names = new Set<string>(['id', 'last_modified', ...columns]);
  if (schema && isPlainObject(schema.properties)) for (const name of Object.keys(schema.properties)) names.add(name);
  for (const item of items.slice(0, 50)) for (const key of Object.keys(item)) names.add(key);
  return [...names];
}

interface RecordsTableProps {
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
}: RecordsTableProps) {
  const listQuery = useMemo(() => parseListQuery(query), [query]);
  const columns = useMemo(
    () => columnsFor(listQuery.fields, collection, schema, state.items),
    [listQuery.fields, collection, schema, state.items.length > 0],
  );
  const knownFields = useMemo(
    () => fieldsToSuggest(columns, schema, state.items),
    [columns, schema, state.items.length > 0],
  );
  const cells = columns.map(() => `minmax(${narrow ? 80 : 120}px, 1fr)`).join(' ');
  const template = `minmax(${narrow ? 90 : 150}px, 1.2fr) ${cells}${narrow ? '' : ' 170px'}`;
  const minWidth = narrow ? 100 + columns.length * 90 : 150 + columns.length * 130 + 170;

  const apply: Apply = (next) => {
    navigate(href.collection(bid, cid, 'records', toSearchParams({ ...listQuery, ...next })));
  };

  const headerCell = (field: string, label: string) => (
    <SortHeader
      key={field}
      label={label}
      direction={sortDirection(listQuery.sort, field)}
      onSort={() => apply({ sort: nextSort(listQuery.sort, field) })}
    />
  );

  return (
    <div class="records">
      <QueryBar state={state} query={listQuery} apply={apply} fields={knownFields} onReload={onReload} />
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
          state.loading ? <Spinner label="Loading records…" /> : <NoRecord filtered={listQuery.filters.length > 0} />
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

function NoRecord({ filtered }: { filtered: boolean }) {
  return (
    <div class="muted">{filtered ? 'No record matches these filters.' : 'This collection has no record yet.'}</div>
  );
}

function SortHeader({
  label,
  direction,
  onSort,
}: {
  label: string;
  direction: ReturnType<typeof sortDirection>;
  onSort: () => void;
}) {
  return (
    <span
      role="columnheader"
      aria-sort={direction === 'asc' ? 'ascending' : direction === 'desc' ? 'descending' : undefined}
    >
      <button
        type="button"
        class="sort-button"
        onClick={onSort}
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
