/**
 * What the signed-in principal can do, from `GET /permissions` (§9.3): every object on which
 * one of its principals holds a permission, with the permissions it implies. Paged as it
 * scrolls, so 20,000 entries open in the time of one page.
 */
import type { PermissionEntry } from '@quire/client/admin';
import { useMemo, useState } from 'preact/hooks';
import { formatCount } from '../lib/format.js';
import { useDebounced, usePagedList } from '../lib/hooks.js';
import { href, hrefOfUri } from '../lib/router.js';
import { useConsole } from './context.js';
import { FilterInput, FilterSelect, KIND_OPTIONS, OBJECT_PLACEHOLDER } from './FilterFields.js';
import { PagedTable, TableRow } from './PagedTable.js';
import { EmptyState, PageHeader, Principal, Spinner } from './ui.js';

const TEMPLATE = '110px minmax(260px, 2fr) minmax(220px, 1.5fr)';
const PERMISSION_OPTIONS = ['read', 'write', 'collection:create', 'group:create', 'record:create', 'bucket:create'];

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
  const paged = usePagedList<PermissionEntry & { id: string }>(api, '/permissions', params, {
    firstPageSize: 200,
    minPageSize: 500,
  });
  const [state] = paged;
  const user = hello.user;

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
        <FilterSelect label="Kind" value={kind} options={[['root', 'server'], ...KIND_OPTIONS]} onChange={setKind} />
        <FilterSelect label="Permission" value={permission} options={PERMISSION_OPTIONS} onChange={setPermission} />
        <FilterInput label="Bucket" value={bucket} onInput={setBucket} />
        <FilterInput label="Object" value={search} onInput={setSearch} placeholder={OBJECT_PLACEHOLDER} grow />
      </form>
      <div class="muted small list-status" aria-live="polite">
        {state.complete
          ? `${formatCount(state.items.length)} object${state.items.length === 1 ? '' : 's'}`
          : `${formatCount(state.items.length)} objects so far (scroll for more)`}
      </div>
      <PagedTable
        label="My access"
        paged={paged}
        template={TEMPLATE}
        columns={['Kind', 'Object', 'You can']}
        empty={state.loading ? <Spinner /> : <EmptyState title="No permission found" />}
        renderRow={(entry, index) => <AccessRow entry={entry} index={index} />}
      />
    </div>
  );
}

function AccessRow({ entry, index }: { entry: PermissionEntry; index: number }) {
  const link = entry.uri.startsWith('/accounts/') ? href.accounts() : hrefOfUri(entry.uri);
  return (
    <TableRow index={index} template={TEMPLATE}>
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
    </TableRow>
  );
}
