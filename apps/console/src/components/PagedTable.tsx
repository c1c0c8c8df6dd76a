/**
 * A table over a list read page by page (`usePagedList`): the rows in view only (VirtualList),
 * a placeholder row for each one not loaded yet, loading more as it scrolls, and the list's
 * error above it with a retry.
 */
import type { ComponentChildren, HTMLAttributes } from 'preact';
import { useCallback } from 'preact/hooks';
import type { PagedList, PagedState } from '../lib/paged-list.js';
import { rowCount } from '../lib/paged-list.js';
import { ErrorNotice } from './ui.js';
import { VirtualList } from './VirtualList.js';

interface PagedTableProps<T extends { id?: string }> {
  label: string;
  /** What `usePagedList` answers. */
  paged: [PagedState<T>, PagedList<T> | null];
  /** The rows' CSS grid columns, shared by the header and every row. */
  template: string;
  /** The header's cells: each column's title, or (`header`) the cells themselves. */
  columns?: ComponentChildren[];
  header?: ComponentChildren;
  /** Shown instead of the rows when there is none. */
  empty: ComponentChildren;
  renderRow: (item: T, index: number) => ComponentChildren;
  /** Changes of this value scroll back to the top (by default, the list's query). */
  resetKey?: string;
  rowHeight?: number;
  class?: string;
  minWidth?: number;
  ariaRowCount?: number;
  /** A title for errors that retrying will not fix (then no retry button). */
  errorTitle?: (error: Error) => string | undefined;
}

export function PagedTable<T extends { id?: string }>(props: PagedTableProps<T>) {
  const { template } = props;
  const [state, list] = props.paged;
  const onRange = useCallback((_start: number, end: number) => list?.want(end), [list]);
  const fixedTitle = state.error ? props.errorTitle?.(state.error) : undefined;
  return (
    <>
      {state.error ? (
        fixedTitle ? (
          <ErrorNotice error={state.error} title={fixedTitle} />
        ) : (
          <ErrorNotice error={state.error} onRetry={() => list?.retry()} />
        )
      ) : null}
      {state.error && state.items.length === 0 ? null : (
        <VirtualList
          label={props.label}
          class={props.class ?? 'table'}
          count={rowCount(state)}
          rowHeight={props.rowHeight ?? 44}
          onRange={onRange}
          resetKey={props.resetKey ?? String(list?.params ?? '')}
          {...(props.minWidth === undefined ? {} : { minWidth: props.minWidth })}
          {...(props.ariaRowCount === undefined ? {} : { ariaRowCount: props.ariaRowCount })}
          header={
            <div class="trow thead" role="row" style={{ gridTemplateColumns: template }}>
              {props.columns?.map((column, index) => (
                <span key={index} role="columnheader">
                  {column}
                </span>
              )) ?? props.header}
            </div>
          }
          empty={props.empty}
          renderRow={(index) => {
            const item = state.items[index];
            if (!item) return <TableRow index={index} template={template} class="trow skeleton" />;
            return props.renderRow(item, index);
          }}
        />
      )}
    </>
  );
}

/** One row of a PagedTable (`index` counts from 0; the header is row 1 for assistive technology). */
export function TableRow({
  index,
  template,
  class: className = 'trow',
  children,
  ...rest
}: {
  index: number;
  template: string;
  class?: string;
  children?: ComponentChildren;
} & Pick<HTMLAttributes<HTMLDivElement>, 'onClick' | 'aria-selected'>) {
  return (
    <div class={className} role="row" aria-rowindex={index + 2} style={{ gridTemplateColumns: template }} {...rest}>
      {children}
    </div>
  );
}
