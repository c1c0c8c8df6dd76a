/**
 * What the signed-in principal can do, from `GET /permissions` (§9.3): every object on which
 * one of its principals holds a permission, with the permissions it implies. Paged as it
 * scrolls, so 20,000 entries open in the time of one page.
 */
import type { PermissionEntry } from '@quire/client/admin';
import { useCallback, useMemo, useState } from 'preact/hooks';
import { formatCount } from '../lib/format.js';
import { useDebounced, usePagedList } from '../lib/hooks.js';
import { href, hrefOfUri } from '../lib/router.js';
import { rowCount } from '../lib/paged-list.js';
import { useConsole } from './context.js';
import { EmptyState, ErrorNotice, PageHeader, Principal, Spinner } from './ui.js';
import { VirtualList } from './VirtualList.js';

export function AccessPage() {
  const { api, hello } = useConsole();
  const [kind, setKind] = useState('');
  const [bucket, setBucket] = useState('');
  const [search, setSearch] = useState('');
  const [permission, setPermission] = useState('');
  const debouncedBucket = useDebounced(bucket.trim(), 300);
  const debouncedSearch = useDebounced(search.trim(), 300);
  const params = useMemo(() => {
    const query = new URLSearchParams({ _sort: 'uri' });
    if (kind) query.set('resource_name', kind);
    if (debouncedBucket) query.set('bucket_id', JSON.stringify(debouncedBucket));
    if (debouncedSearch) query.set('like_uri', JSON.stringify(debouncedSearch));
    if (permission) query.set('contains_permissions', JSON.stringify(permission));
    return String(query);
  }, [kind, debouncedBucket, debouncedSearch, permission]);
  const [state, list] = usePagedList<PermissionEntry & { id: string }>(api, '/permissions', params, {
    firstPageSize: 200,
    minPageSize: 500,
  });
  const onRange = useCallback((_start: number, end: number) => list?.want(end), [list]);
  const count = rowCount(state);
  const user = hello.user;
  const template = '110px minmax(260px, 2fr) minmax(220px, 1.5fr)';

  return (
    <div class="page fill">
      <PageHeader title="My access">
        Everything you can do on this server, through any of your principals: your user id, the groups you are in, and
        everyone's.
      </PageHeader>
      {user ? (
        <ul class="principal-strip" aria-label="Your principals">
          {(user.principals ?? []).map((principal) => (
            <li key={principal}>
              <Principal principal={principal} me={user.id} />
            </li>
          ))}
        </ul>
      ) : null}
      <form class="filters" aria-label="Access filters" onSubmit={(event) => event.preventDefault()}>
        <label class="field inline">
          <span class="field-label">Kind</span>
          <select value={kind} onChange={(event) => setKind(event.currentTarget.value)}>
            <option value="">any</option>
            <option value="root">server</option>
            <option value="bucket">bucket</option>
            <option value="collection">collection</option>
            <option value="group">group</option>
            <option value="record">record</option>
          </select>
        </label>
        <label class="field inline">
          <span class="field-label">Permission</span>
          <select value={permission} onChange={(event) => setPermission(event.currentTarget.value)}>
            <option value="">any</option>
            {['read', 'write', 'collection:create', 'group:create', 'record:create', 'bucket:create'].map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <label class="field inline">
          <span class="field-label">Bucket</span>
          <input
            value={bucket}
            onInput={(event) => setBucket(event.currentTarget.value)}
            placeholder="any"
            spellcheck={false}
          />
        </label>
        <label class="field inline grow">
          <span class="field-label">Object</span>
          <input
            value={search}
            onInput={(event) => setSearch(event.currentTarget.value)}
            placeholder="part of its path, * as wildcard"
            spellcheck={false}
          />
        </label>
      </form>
      <div class="muted small list-status" aria-live="polite">
        {state.complete
          ? `${formatCount(state.items.length)} object${state.items.length === 1 ? '' : 's'}`
          : `${formatCount(state.items.length)} objects so far (scroll for more)`}
      </div>
      {state.error ? <ErrorNotice error={state.error} onRetry={() => list?.retry()} /> : null}
      {state.error && state.items.length === 0 ? null : (
        <VirtualList
          label="My access"
          class="table"
          count={count}
          rowHeight={44}
          onRange={onRange}
          resetKey={params}
          header={
            <div class="trow thead" role="row" style={{ gridTemplateColumns: template }}>
              <span role="columnheader">Kind</span>
              <span role="columnheader">Object</span>
              <span role="columnheader">You can</span>
            </div>
          }
          empty={state.loading ? <Spinner /> : <EmptyState title="No permission found" />}
          renderRow={(index) => {
            const entry = state.items[index];
            if (!entry) return <div class="trow skeleton" role="row" style={{ gridTemplateColumns: template }} />;
            const link = entry.uri.startsWith('/accounts/') ? href.accounts() : hrefOfUri(entry.uri);
            return (
              <div class="trow" role="row" aria-rowindex={index + 2} style={{ gridTemplateColumns: template }}>
                <span role="cell">
                  <span class="badge">{entry.resource_name === 'root' ? 'server' : entry.resource_name}</span>
                </span>
                <span role="cell" class="ellipsis" title={entry.uri}>
                  {entry.uri === '/' ? (
                    <span class="muted">the server itself</span>
                  ) : link ? (
                    <a href={link}>{entry.uri}</a>
                  ) : (
                    entry.uri
                  )}
                </span>
                <span role="cell" class="perm-chips">
                  {entry.permissions
                    .filter((name) => name !== 'read:attributes')
                    .map((name) => (
                      <span key={name} class={name === 'write' ? 'badge strong' : 'badge'}>
                        {name}
                      </span>
                    ))}
                </span>
              </div>
            );
          }}
        />
      )}
    </div>
  );
}
