/**
 * A list of buckets, collections or groups: paged through Next-Page as it scrolls (5,000 groups
 * open as fast as 5), filtered by id, each row a link.
 */
import type { ComponentChildren } from 'preact';
import { useCallback, useState } from 'preact/hooks';
import type { KintoObject } from '@quire/client/admin';
import { formatTimestamp, relativeTime } from '../lib/format.js';
import { useDebounced, usePagedList } from '../lib/hooks.js';
import { countLabel, rowCount } from '../lib/paged-list.js';
import { useConsole } from './context.js';
import { ErrorNotice, Spinner } from './ui.js';
import { VirtualList } from './VirtualList.js';

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
  const [state, list] = usePagedList<KintoObject>(api, path, String(params), { count: true }, version);
  const count = rowCount(state);
  const onRange = useCallback((_start: number, end: number) => list?.want(end), [list]);
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
      {state.error ? <ErrorNotice error={state.error} onRetry={() => list?.retry()} /> : null}
      {state.error && state.items.length === 0 ? null : (
        <VirtualList
          label={`${noun}s`}
          class="table"
          count={count}
          rowHeight={44}
          onRange={onRange}
          resetKey={term}
          header={
            <div class="trow thead" role="row" style={{ gridTemplateColumns: template }}>
              <span role="columnheader">Id</span>
              {columns.map((column) => (
                <span key={column.label} role="columnheader">
                  {column.label}
                </span>
              ))}
              <span role="columnheader">Last modified</span>
            </div>
          }
          empty={
            state.loading ? <Spinner /> : <div class="muted">{term ? `No ${noun} matches “${term}”.` : emptyText}</div>
          }
          renderRow={(index) => {
            const item = state.items[index];
            if (!item)
              return (
                <div
                  class="trow skeleton"
                  role="row"
                  aria-rowindex={index + 2}
                  style={{ gridTemplateColumns: template }}
                />
              );
            return (
              <div class="trow" role="row" aria-rowindex={index + 2} style={{ gridTemplateColumns: template }}>
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
              </div>
            );
          }}
        />
      )}
    </div>
  );
}
