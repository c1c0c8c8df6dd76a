/**
 * The permissions of one object: a principal per row, a permission per column. A tick is the
 * object's own entry (editable); what a principal gets anyway — from the bucket or collection
 * above, or through another permission of the object (write ⇒ read) — is written in the cell.
 *
 * Changes are sent as JSON-Patch operations on `/permissions/<name>/<principal>` (§4.4): only
 * what was changed, so entries this user cannot see (the server shows an object's permissions
 * only to its writers) and changes made meanwhile by others are kept.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { JsonPatchOperation, KintoObject, Permissions } from '@quire/client/admin';
import { useSaving } from '../lib/hooks.js';
import {
  describePrincipal,
  type Grant,
  inheritedGrants,
  type Level,
  levelsOfUri,
  normalisePermissions,
  type ObjectKind,
  PERMISSION_HELP,
  PERMISSION_NAMES,
  principalsOf,
} from '../lib/permissions.js';
import { hrefOfUri } from '../lib/router.js';
import { useCapabilities, useConsole } from './context.js';
import { EditActions } from './EditActions.js';
import { PrincipalInput } from './FilterFields.js';
import { Notice, onSubmit, Principal, Spinner } from './ui.js';

function grantText(grant: Grant, objectUri: string): string {
  return grant.uri === objectUri ? `implied by ${grant.permission}` : `${grant.permission} on ${grant.kind}`;
}

interface PermissionsEditorProps {
  kind: ObjectKind;
  /** Protocol URI of the object (`/buckets/b/collections/c`). */
  uri: string;
  /** Its API path (ids encoded). */
  path: string;
  /** Its own permissions as the server showed them (`{}` when hidden from this user). */
  permissions: Permissions;
  onSaved: (object: KintoObject, permissions: Permissions) => void;
}

export function PermissionsEditor({ kind, uri, path, permissions, onSaved }: PermissionsEditorProps) {
  const { api, hello, notify } = useConsole();
  const { readonly } = useCapabilities();
  const me = hello.user?.id;
  const names = PERMISSION_NAMES[kind];
  const original = useMemo(() => normalisePermissions(kind, permissions), [kind, permissions]);
  const [edited, setEdited] = useState<Permissions>(original);
  const saving = useSaving();
  const visible = Object.keys(permissions).length > 0;

  useEffect(() => setEdited(original), [original]);

  const { ancestors, groups } = useSurroundings(uri);

  const levels: Level[] = [...(ancestors ?? []), { kind, uri, permissions: edited }];
  const rows = principalsOf(levels, edited);
  const changed = names.some(
    (name) => JSON.stringify([...(edited[name] ?? [])].sort()) !== JSON.stringify(original[name]),
  );
  const hiddenAncestors = (ancestors ?? []).filter((level) => level.permissions === null);

  const toggle = (principal: string, name: string, on: boolean) =>
    setEdited((current) => withEntry(current, principal, name, on));
  const removeRow = (principal: string) => setEdited((current) => withoutPrincipal(current, principal));

  async function save() {
    const operations = patchOperations(names, original, edited);
    if (!operations.length) return;
    await saving.run(async () => {
      const response = await api.jsonPatch(path, operations);
      notify('Permissions saved.');
      onSaved(response.data, response.permissions ?? {});
    });
  }

  const suggestions = ['system.Everyone', 'system.Authenticated', ...(me ? [me] : []), ...groups];

  return (
    <section class="permissions" aria-label="Permissions">
      {!visible ? <HiddenPermissionsNotice /> : null}
      {ancestors === null ? (
        <Spinner label="Reading the permissions above…" />
      ) : (
        <PermissionsTable
          uri={uri}
          names={names}
          levels={levels}
          rows={rows}
          edited={edited}
          visible={visible}
          disabled={readonly || saving.busy}
          onToggle={toggle}
          onRemove={readonly ? null : removeRow}
        />
      )}
      {ancestors !== null && rows.length ? <Legend /> : null}
      {hiddenAncestors.length ? <HiddenAncestors levels={hiddenAncestors} /> : null}

      {!readonly ? (
        <GrantForm
          names={names}
          suggestions={suggestions}
          onGrant={(principal, name) => toggle(principal, name, true)}
        />
      ) : null}

      <EditActions
        saving={saving}
        dirty={changed}
        saveLabel="Save permissions"
        onSave={() => void save()}
        onUndo={() => setEdited(original)}
      >
        {!readonly && hello.settings.explicit_permissions !== false ? (
          <span class="muted small">Saving also adds you to write (the server does so for every change).</span>
        ) : null}
      </EditActions>
    </section>
  );
}

/** A principal per row, a permission per column: ticks for the object's own entries, the rest explained. */
interface PermissionsTableProps {
  uri: string;
  names: readonly string[];
  levels: Level[];
  rows: string[];
  edited: Permissions;
  /** The server showed the object's permissions. */
  visible: boolean;
  disabled: boolean;
  onToggle: (principal: string, name: string, on: boolean) => void;
  /** Null: rows cannot be removed (a read-only server). */
  onRemove: ((principal: string) => void) | null;
}

function PermissionsTable({
  uri,
  names,
  levels,
  rows,
  edited,
  visible,
  disabled,
  onToggle,
  onRemove,
}: PermissionsTableProps) {
  const { hello } = useConsole();
  const me = hello.user?.id;
  return (
    <div class="table-wrap">
      <table class="perm-table">
        <thead>
          <tr>
            <th scope="col">Principal</th>
            {names.map((name) => (
              <th key={name} scope="col" title={PERMISSION_HELP[name]}>
                {name}
              </th>
            ))}
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.length === 0 ? (
            <tr>
              <td colSpan={names.length + 2} class="muted">
                No principal has a permission here{visible ? '' : ' that you can see'}.
              </td>
            </tr>
          ) : null}
          {rows.map((principal) => {
            const own = names.some((name) => edited[name]?.includes(principal));
            const link = principal.startsWith('/buckets/') ? hrefOfUri(principal) : null;
            const who = <Principal principal={principal} me={me} />;
            return (
              <tr key={principal}>
                <th scope="row">{link ? <a href={link}>{who}</a> : who}</th>
                {names.map((name) => (
                  <PermissionCell
                    key={name}
                    principal={principal}
                    name={name}
                    checked={edited[name]?.includes(principal) ?? false}
                    grants={inheritedGrants(levels, principal, name)}
                    uri={uri}
                    disabled={disabled}
                    onToggle={onToggle}
                  />
                ))}
                <td class="row-actions">
                  {own && onRemove ? (
                    <button
                      type="button"
                      class="button ghost small"
                      aria-label={`Remove ${principal}`}
                      onClick={() => onRemove(principal)}
                    >
                      Remove
                    </button>
                  ) : null}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

/** One principal's permission: its own tick, and what it holds anyway (`grants`), explained. */
function PermissionCell({
  principal,
  name,
  checked,
  grants,
  uri,
  disabled,
  onToggle,
}: {
  principal: string;
  name: string;
  checked: boolean;
  grants: Grant[];
  uri: string;
  disabled: boolean;
  onToggle: (principal: string, name: string, on: boolean) => void;
}) {
  return (
    <td class={checked ? 'perm-cell own' : grants.length ? 'perm-cell inherited' : 'perm-cell'}>
      <label class="perm-check">
        <input
          type="checkbox"
          aria-label={`${describePrincipal(principal).title}: ${name}`}
          checked={checked}
          disabled={disabled}
          onChange={(event) => onToggle(principal, name, event.currentTarget.checked)}
        />
        {grants.length ? (
          <span class="perm-via" title={grants.map((item) => grantText(item, uri)).join(', ')}>
            {grantText(grants[0]!, uri)}
            {grants.length > 1 ? ` +${grants.length - 1}` : ''}
          </span>
        ) : null}
      </label>
    </td>
  );
}

/** The permissions of the levels above `uri` (null until read), and its bucket's groups (to suggest them). */
function useSurroundings(uri: string): { ancestors: Level[] | null; groups: string[] } {
  const { api } = useConsole();
  const [ancestors, setAncestors] = useState<Level[] | null>(null);
  const [groups, setGroups] = useState<string[]>([]);
  useEffect(() => {
    const controller = new AbortController();
    const above = levelsOfUri(uri).slice(0, -1);
    Promise.all(
      above.map(async (level): Promise<Level> => {
        try {
          const object = await api.getObject(level.uri.split('/').map(encodeURIComponent).join('/'), controller.signal);
          return { ...level, permissions: Object.keys(object.permissions).length ? object.permissions : null };
        } catch {
          return { ...level, permissions: null };
        }
      }),
    ).then(
      (levels) => !controller.signal.aborted && setAncestors(levels),
      () => {},
    );
    const bucket = levelsOfUri(uri)[0];
    if (bucket) {
      // The bucket's groups, as principals to offer (the first 1,000).
      const bid = bucket.uri.split('/')[2] ?? '';
      api.listGroups(bid, { query: { _fields: 'id', _sort: 'id', _limit: 200 }, pages: 5 }).then(
        (list) => !controller.signal.aborted && setGroups(list.map((group) => `${bucket.uri}/groups/${group.id}`)),
        () => {},
      );
    }
    return () => controller.abort();
  }, [api, uri]);
  return { ancestors, groups };
}

/** `permissions` with `principal` given (`on`) or taken `name`. */
function withEntry(permissions: Permissions, principal: string, name: string, on: boolean): Permissions {
  const list = new Set(permissions[name] ?? []);
  if (on) list.add(principal);
  else list.delete(principal);
  return { ...permissions, [name]: [...list].sort() };
}

/** `permissions` without any entry of `principal`. */
function withoutPrincipal(permissions: Permissions, principal: string): Permissions {
  return Object.fromEntries(
    Object.entries(permissions).map(([name, list]) => [name, list.filter((item) => item !== principal)]),
  );
}

/** What is only added or removed, so that entries this user cannot see, and others' changes, are kept (§4.4). */
function patchOperations(names: readonly string[], original: Permissions, edited: Permissions): JsonPatchOperation[] {
  const operations: JsonPatchOperation[] = [];
  for (const name of names) {
    const before = new Set(original[name]);
    const after = new Set(edited[name]);
    for (const principal of after)
      if (!before.has(principal)) operations.push({ op: 'add', path: `/permissions/${name}/${principal}` });
    for (const principal of before)
      if (!after.has(principal)) operations.push({ op: 'remove', path: `/permissions/${name}/${principal}` });
  }
  return operations;
}

function HiddenPermissionsNotice() {
  return (
    <Notice kind="warning">
      The server shows an object's permissions only to the principals in its own <strong>write</strong> permission, and
      you are not one of them here (or it has none). You can still grant permissions: existing entries you cannot see
      are kept.
    </Notice>
  );
}

function Legend() {
  return (
    <div class="perm-legend muted small">
      <span class="legend-own">ticked: the object's own permission (what you edit here)</span>
      <span class="legend-inherited">green: held anyway, from a parent or through another permission</span>
    </div>
  );
}

/** The levels above whose permissions this user may not read. */
function HiddenAncestors({ levels }: { levels: Level[] }) {
  return (
    <p class="muted small">
      Not shown: what {levels.map((level) => `${level.kind} ${level.uri.split('/').pop()}`).join(' and ')} grant
      {levels.length === 1 ? 's' : ''} (only their writers see it). Permissions granted to everyone by the server's
      settings are not shown either.
    </p>
  );
}

/** A new entry: a principal (typed, or one of `suggestions`) and one of the object's permissions. */
function GrantForm({
  names,
  suggestions,
  onGrant,
}: {
  names: readonly string[];
  suggestions: string[];
  onGrant: (principal: string, name: string) => void;
}) {
  const [newPrincipal, setNewPrincipal] = useState('');
  const [newPermission, setNewPermission] = useState(names[0]!);
  function grant() {
    const principal = newPrincipal.trim();
    if (!principal) return;
    onGrant(principal, newPermission);
    setNewPrincipal('');
  }
  return (
    <form class="grant-form" onSubmit={onSubmit(grant)}>
      <PrincipalInput
        label="Principal"
        listId="principal-suggestions"
        placeholder="account:alice, system.Authenticated, /buckets/b/groups/editors…"
        value={newPrincipal}
        onInput={setNewPrincipal}
        suggestions={suggestions}
        detailed
        grow
      />
      <label class="field inline">
        <span class="field-label">Permission</span>
        <select value={newPermission} onChange={(event) => setNewPermission(event.currentTarget.value)}>
          {names.map((name) => (
            <option key={name} value={name}>
              {name}
            </option>
          ))}
        </select>
      </label>
      <button type="submit" class="button secondary" disabled={!newPrincipal.trim()}>
        Grant
      </button>
    </form>
  );
}
