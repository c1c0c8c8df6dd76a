/**
 * A list of buckets, collections or groups: paged through Next-Page as it scrolls (5,000 groups
 * open as fast as 5), filtered by id, each row a link.
 */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import type { KintoObject } from '@quire/client/admin';
import { formatTimestamp, relativeTime } from '../lib/format.js';
import { useDebounced, usePagedList } from '../lib/hooks.js';
import { countLabel } from '../lib/paged-list.js';
import { useConsole } from './context.js';
import { PagedTable, TableRow } from './PagedTable.js';
import { Spinner } from './ui.js';

export interface Column {
  label: string;
  width: string;
  render: (item: KintoObject) => ComponentChildren;
}

export function ObjectList({
  path,
  noun,
  linkOf,
  columns = [],
  emptyText,
  version = 0,
  toolbar,
}: {
  path: string;
  noun: string;
  linkOf: (item: KintoObject) => string;
  columns?: Column[];
  emptyText: ComponentChildren;
  version?: number;
  toolbar?: ComponentChildren;
}) {
  const { api } = useConsole();
  const [search, setSearch] = useState('');
  const term = useDebounced(search.trim(), 250);
  const params = new URLSearchParams({ _sort: 'id' });
  if (term) params.set('like_id', JSON.stringify(term));
  const paged = usePagedList<KintoObject>(api, path, String(params), { count: true }, version);
  const [state] = paged;
  const template = `minmax(180px, 2fr) ${columns.map((column) => column.width).join(' ')} 190px`;

  return (
    <div class="object-list">
      <div class="toolbar">
        <input
          type="search"
          class="search"
          placeholder={`Find ${noun}s by id…`}
          aria-label={`Find ${noun}s by id`}
          value={search}
          onInput={(event) => setSearch(event.currentTarget.value)}
        />
        <span class="muted small" aria-live="polite">
          {countLabel(state, noun)}
        </span>
        <span class="toolbar-spacer" />
        {toolbar}
      </div>
      <PagedTable
        label={`${noun}s`}
        paged={paged}
        template={template}
        columns={['Id', ...columns.map((column) => column.label), 'Last modified']}
        empty={
          state.loading ? <Spinner /> : <div class="muted">{term ? `No ${noun} matches “${term}”.` : emptyText}</div>
        }
        renderRow={(item, index) => (
          <TableRow index={index} template={template}>
            <span role="cell" class="cell-id">
              <a href={linkOf(item)}>{item.id}</a>
            </span>
            {columns.map((column) => (
              <span key={column.label} role="cell">
                {column.render(item)}
              </span>
            ))}
            <span role="cell" class="muted" title={formatTimestamp(item.last_modified)}>
              {relativeTime(item.last_modified)}
            </span>
          </TableRow>
        )}
      />
    </div>
  );
}
