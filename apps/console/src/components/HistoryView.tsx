/**
 * A bucket's history (§13.3): who changed what and when, filtered by user, kind of object,
 * action, object and time; an entry opens the difference with the object's previous version,
 * or with any other version of it.
 */
import { statusOf } from '../lib/remote.js';
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { HistoryEntry } from '@quire/client/admin';
import { changedFields } from '../lib/diff.js';
import { formatTimestamp, fromDateTimeLocal, relativeTime } from '../lib/format.js';
import { useAsync, useDebounced, usePagedList } from '../lib/hooks.js';
import { paths } from '../lib/objects.js';
import { describePrincipal } from '../lib/permissions.js';
import { hrefOfUri } from '../lib/router.js';
import { countLabel } from '../lib/paged-list.js';
import { useConsole } from './context.js';
import { DiffView } from './DiffView.js';
import { FilterInput, FilterSelect, KIND_OPTIONS, OBJECT_PLACEHOLDER, PrincipalInput } from './FilterFields.js';
import { PagedTable, TableRow } from './PagedTable.js';
import { EmptyState, ErrorNotice, Spinner } from './ui.js';

/** A version's data without its timestamp, which always differs. */
function withoutStamp(data: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (!data) return data;
  const { last_modified: _lastModified, ...rest } = data;
  return rest;
}

const ACTION_LABEL = { create: 'created', update: 'updated', delete: 'deleted' } as const;
const ACTION_OPTIONS = Object.entries(ACTION_LABEL);

function objectLabel(entry: HistoryEntry): string {
  const id = entry.uri.split('/').pop() ?? entry.uri;
  if (entry.resource_name === 'record') return `record ${id} in ${entry.collection_id ?? '?'}`;
  return `${entry.resource_name} ${id}`;
}

export function HistoryView({
  bid,
  fixed = {},
  compact,
}: {
  bid: string;
  fixed?: Record<string, string>;
  compact?: boolean;
}) {
  const { api } = useConsole();
  const [filters, setFilters] = useState(NO_FILTERS);
  const [selected, setSelected] = useState<HistoryEntry | null>(null);
  // Typed names are sent once the typing stops.
  const user = useDebounced(filters.user.trim(), 300);
  const object = useDebounced(filters.object.trim(), 300);
  const { resource, action, since, before } = filters;
  const params = useMemo(
    () => historyQuery(fixed, { user, resource, action, object, since, before }),
    [fixed, user, resource, action, object, since, before],
  );

  const paged = usePagedList<HistoryEntry>(api, `${paths.bucket(bid)}/history`, params, {
    count: true,
    firstPageSize: 100,
  });
  const [state] = paged;
  useEffect(() => setSelected(null), [params]);
  const filtersActive = Object.values(filters).some(Boolean);
  const template = compact
    ? '150px 1fr 90px'
    : selected
      ? '150px minmax(60px, 0.7fr) 84px minmax(120px, 1.5fr)'
      : '170px minmax(140px, 1fr) 96px minmax(200px, 2fr)';

  return (
    <div class={compact ? 'history compact' : selected ? 'history with-detail' : 'history'}>
      <div class="history-main">
        <HistoryFilterForm
          filters={filters}
          onChange={setFilters}
          users={usersOf(state.items)}
          byObject={!fixed.uri}
          byDate={!compact}
        />
        <div class="muted small list-status" aria-live="polite">
          {countLabel(state, 'change')}
        </div>
        <PagedTable
          label="History"
          paged={paged}
          template={template}
          errorTitle={(error) => (statusOf(error) === 404 || statusOf(error) === 400 ? 'No history here' : undefined)}
          columns={compact ? ['When', 'Who', 'Did'] : ['When', 'Who', 'Did', 'What']}
          empty={
            state.loading ? (
              <Spinner />
            ) : (
              <EmptyState title={filtersActive ? 'No change matches these filters' : 'No change recorded yet'} />
            )
          }
          renderRow={(entry, index) => (
            <HistoryRow
              entry={entry}
              index={index}
              template={template}
              compact={compact}
              selected={selected?.id === entry.id}
              onSelect={setSelected}
            />
          )}
        />
      </div>
      {selected ? <HistoryDetail bid={bid} entry={selected} onClose={() => setSelected(null)} /> : null}
    </div>
  );
}

interface HistoryFilters {
  user: string;
  resource: string;
  action: string;
  object: string;
  since: string;
  before: string;
}

const NO_FILTERS: HistoryFilters = { user: '', resource: '', action: '', object: '', since: '', before: '' };

/** The history's query string: newest first, the `fixed` fields, then the filters that are set. */
function historyQuery(fixed: Record<string, string>, filters: HistoryFilters): string {
  const query = new URLSearchParams({ _sort: '-last_modified' });
  for (const [name, value] of Object.entries(fixed)) query.set(name, JSON.stringify(value));
  if (filters.user) query.set('user_id', JSON.stringify(filters.user));
  if (filters.resource) query.set('resource_name', filters.resource);
  if (filters.action) query.set('action', filters.action);
  if (filters.object) query.set('like_uri', JSON.stringify(filters.object));
  const sinceMs = fromDateTimeLocal(filters.since);
  const beforeMs = fromDateTimeLocal(filters.before);
  if (sinceMs !== null) query.set('_since', String(sinceMs));
  if (beforeMs !== null) query.set('_before', String(beforeMs));
  return String(query);
}

function HistoryFilterForm({
  filters,
  onChange,
  users,
  byObject,
  byDate,
}: {
  filters: HistoryFilters;
  onChange: (filters: HistoryFilters) => void;
  /** Principals to suggest. */
  users: string[];
  /** Filters on the kind and path of the object (not when the view shows one object). */
  byObject: boolean;
  byDate: boolean;
}) {
  const set = (name: keyof HistoryFilters) => (value: string) => onChange({ ...filters, [name]: value });
  return (
    <form class="filters" onSubmit={(event) => event.preventDefault()} aria-label="History filters">
      <PrincipalInput
        label="User"
        value={filters.user}
        onInput={set('user')}
        listId="history-users"
        suggestions={users}
      />
      {byObject ? (
        <>
          <FilterSelect label="Kind" value={filters.resource} options={KIND_OPTIONS} onChange={set('resource')} />
          <FilterInput
            label="Object"
            value={filters.object}
            onInput={set('object')}
            placeholder={OBJECT_PLACEHOLDER}
            grow
          />
        </>
      ) : null}
      <FilterSelect label="Action" value={filters.action} options={ACTION_OPTIONS} onChange={set('action')} />
      {byDate ? (
        <>
          <DateFilter label="After" value={filters.since} onInput={set('since')} />
          <DateFilter label="Before" value={filters.before} onInput={set('before')} />
        </>
      ) : null}
      {Object.values(filters).some(Boolean) ? (
        <button type="button" class="button ghost small" onClick={() => onChange(NO_FILTERS)}>
          Clear filters
        </button>
      ) : null}
    </form>
  );
}

/** The authors of the first changes listed, to suggest them in the user filter. */
function usersOf(items: HistoryEntry[]): string[] {
  return [...new Set(items.slice(0, 500).map((entry) => entry.user_id))].filter(Boolean);
}

function DateFilter({ label, value, onInput }: { label: string; value: string; onInput: (value: string) => void }) {
  return (
    <label class="field inline">
      <span class="field-label">{label}</span>
      <input type="datetime-local" value={value} onInput={(event) => onInput(event.currentTarget.value)} />
    </label>
  );
}

function HistoryRow({
  entry,
  index,
  template,
  compact,
  selected,
  onSelect,
}: {
  entry: HistoryEntry;
  index: number;
  template: string;
  compact: boolean | undefined;
  selected: boolean;
  onSelect: (entry: HistoryEntry) => void;
}) {
  const when = formatTimestamp(entry.last_modified);
  return (
    <TableRow
      index={index}
      template={template}
      class={selected ? 'trow clickable selected' : 'trow clickable'}
      aria-selected={selected}
      onClick={() => onSelect(entry)}
    >
      <span role="cell" title={when}>
        <button type="button" class="link-button" aria-label={`Show the change of ${objectLabel(entry)} at ${when}`}>
          {when}
        </button>
      </span>
      <span role="cell" title={entry.user_id}>
        {describePrincipal(entry.user_id ?? '').title}
      </span>
      <span role="cell">
        <span class={`badge action-${entry.action}`}>{ACTION_LABEL[entry.action] ?? entry.action}</span>
      </span>
      {!compact ? (
        <span role="cell" class="ellipsis" title={entry.uri}>
          {objectLabel(entry)}
        </span>
      ) : null}
    </TableRow>
  );
}

/** Who changed what, when, with a link to the object while it exists. */
function ChangeHeader({ entry, onClose }: { entry: HistoryEntry; onClose: () => void }) {
  const link = hrefOfUri(entry.uri);
  return (
    <header class="panel-header">
      <div>
        <div class="kicker">
          {describePrincipal(entry.user_id).title} {ACTION_LABEL[entry.action] ?? entry.action}{' '}
          {relativeTime(entry.last_modified)}
        </div>
        <h2 class="panel-title">{objectLabel(entry)}</h2>
        <div class="muted small">
          {formatTimestamp(entry.last_modified)} · {entry.user_id}
          {link && entry.action !== 'delete' ? (
            <>
              {' · '}
              <a href={link}>Open</a>
            </>
          ) : null}
        </div>
      </div>
      <button type="button" class="icon-button" aria-label="Close the change" onClick={onClose}>
        ×
      </button>
    </header>
  );
}

function HistoryDetail({ bid, entry, onClose }: { bid: string; entry: HistoryEntry; onClose: () => void }) {
  const { api } = useConsole();
  // Every version of this object (newest first), to compare with.
  const versions = useAsync(
    (signal) => {
      const query = new URLSearchParams({ uri: JSON.stringify(entry.uri), _sort: '-last_modified', _limit: '200' });
      return api.page<HistoryEntry>(`${paths.bucket(bid)}/history?${query}`, signal).then((page) => page.data);
    },
    [bid, entry.uri],
  );
  const [otherId, setOtherId] = useState<string | null>(null);
  useEffect(() => setOtherId(null), [entry.id]);
  const list = versions.data ?? [];
  const previous = list.find((candidate) => candidate.last_modified < entry.last_modified) ?? null;
  const other = otherId ? (list.find((candidate) => candidate.id === otherId) ?? null) : previous;
  const [older, newer] = other && other.last_modified > entry.last_modified ? [entry, other] : [other, entry];
  const changes = changedFields(older?.target?.data, newer?.target?.data).filter(
    (change) => change.field !== 'last_modified',
  );
  const label = (version: HistoryEntry | null) =>
    version ? `${ACTION_LABEL[version.action] ?? version.action} ${formatTimestamp(version.last_modified)}` : 'before';

  return (
    <section class="history-detail" aria-label="Change details">
      <ChangeHeader entry={entry} onClose={onClose} />
      {versions.loading ? (
        <Spinner />
      ) : versions.error ? (
        <ErrorNotice error={versions.error} />
      ) : (
        <>
          <label class="field inline">
            <span class="field-label">Compare with</span>
            <select value={other?.id ?? ''} onChange={(event) => setOtherId(event.currentTarget.value || null)}>
              {!previous ? <option value="">nothing (first version)</option> : null}
              {list
                .filter((candidate) => candidate.id !== entry.id)
                .map((candidate) => (
                  <option key={candidate.id} value={candidate.id}>
                    {candidate.id === previous?.id ? 'previous version: ' : ''}
                    {label(candidate)} by {describePrincipal(candidate.user_id).title}
                  </option>
                ))}
            </select>
          </label>
          {changes.length ? (
            <p class="changed-fields">
              {changes.map((change) => (
                <span key={change.field} class={`badge change-${change.kind}`}>
                  {change.field} {change.kind}
                </span>
              ))}
            </p>
          ) : null}
          <DiffView
            before={withoutStamp(older?.target?.data)}
            after={withoutStamp(newer?.target?.data)}
            beforeLabel={older ? label(older) : 'Before (nothing)'}
            afterLabel={label(newer)}
            initialMode="unified"
          />
          {JSON.stringify(older?.target?.permissions ?? {}) !== JSON.stringify(newer?.target?.permissions ?? {}) ? (
            <details class="perm-diff">
              <summary>Permissions changed</summary>
              <DiffView
                before={older?.target?.permissions}
                after={newer?.target?.permissions}
                beforeLabel="Before"
                afterLabel="After"
                initialMode="unified"
              />
            </details>
          ) : null}
        </>
      )}
    </section>
  );
}
