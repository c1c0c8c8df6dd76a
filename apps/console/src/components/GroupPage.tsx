/** A group: its members (the group's URI is a principal that each of them holds), history, permissions, attributes. */
import { useEffect, useState } from 'preact/hooks';
import type { KintoObject } from '@quire/client/admin';
import { formatTimestamp, plural, relativeTime } from '../lib/format.js';
import { useAsync } from '../lib/hooks.js';
import { paths, uris } from '../lib/objects.js';
import { type GroupTab, href, navigate } from '../lib/router.js';
import { AttributesEditor } from './AttributesEditor.js';
import { useObjectSave } from './ConflictDialog.js';
import { EditActions } from './EditActions.js';
import { PrincipalInput } from './FilterFields.js';
import { useCapabilities, useConsole } from './context.js';
import { HistoryView } from './HistoryView.js';
import { PermissionsEditor } from './PermissionsEditor.js';
import { Code, ErrorNotice, onSubmit, PageHeader, Principal, Spinner, Tabs } from './ui.js';

export function GroupPage({ bid, gid, tab }: { bid: string; gid: string; tab: GroupTab }) {
  const { api } = useConsole();
  const capabilities = useCapabilities();
  const group = useAsync((signal) => api.getObject(paths.group(bid, gid), signal), [bid, gid]);
  const object = group.data?.data;
  const members = Array.isArray(object?.members) ? (object.members as string[]) : [];
  const tabs = [
    { id: 'members', label: 'Members', href: href.group(bid, gid), count: object ? members.length : null },
    ...(capabilities.history ? [{ id: 'history', label: 'History', href: href.group(bid, gid, 'history') }] : []),
    { id: 'permissions', label: 'Permissions', href: href.group(bid, gid, 'permissions') },
    { id: 'attributes', label: 'Attributes', href: href.group(bid, gid, 'attributes') },
  ];

  return (
    <div class={tab === 'history' ? 'page fill' : 'page'}>
      <PageHeader
        kicker={
          <>
            Group of bucket <a href={href.bucket(bid)}>{bid}</a>
          </>
        }
        title={gid}
      >
        Principal <Code>{uris.group(bid, gid)}</Code>
        {object ? (
          <span title={formatTimestamp(object.last_modified)}> · modified {relativeTime(object.last_modified)}</span>
        ) : null}
      </PageHeader>
      <Tabs label="Group sections" tabs={tabs} current={tab} />
      {group.error ? <ErrorNotice error={group.error} onRetry={group.reload} /> : null}
      {tab === 'history' ? (
        <HistoryView bid={bid} fixed={{ group_id: gid }} />
      ) : !object ? (
        group.loading ? (
          <Spinner />
        ) : null
      ) : tab === 'members' ? (
        <MembersEditor bid={bid} gid={gid} group={object} onSaved={(data) => group.set({ ...group.data!, data })} />
      ) : tab === 'permissions' ? (
        <PermissionsEditor
          kind="group"
          uri={uris.group(bid, gid)}
          path={paths.group(bid, gid)}
          permissions={group.data!.permissions}
          onSaved={(data, permissions) => group.set({ data, permissions, etag: null })}
        />
      ) : (
        <AttributesEditor
          noun="group"
          path={paths.group(bid, gid)}
          object={object}
          onSaved={(data) => group.set({ ...group.data!, data })}
          onDeleted={() => navigate(href.bucket(bid, 'groups'))}
          deleteWarning={<p>Its members lose the permissions granted to the group.</p>}
          help={
            <>
              <Code>members</Code> lists the group's principals.
            </>
          }
        />
      )}
    </div>
  );
}

function MembersEditor({
  bid,
  gid,
  group,
  onSaved,
}: {
  bid: string;
  gid: string;
  group: KintoObject;
  onSaved: (group: KintoObject) => void;
}) {
  const { hello } = useConsole();
  const { readonly } = useCapabilities();
  const saved = Array.isArray(group.members) ? (group.members as string[]) : [];
  const [members, setMembers] = useState<string[]>(saved);
  const [candidate, setCandidate] = useState('');
  const [filter, setFilter] = useState('');
  const { saving, save: put, conflictDialog } = useObjectSave(paths.group(bid, gid), group, 'Members saved.', onSaved);

  useEffect(() => setMembers(Array.isArray(group.members) ? (group.members as string[]) : []), [group]);

  const dirty = JSON.stringify(members) !== JSON.stringify(saved);
  const shown = filter ? members.filter((member) => member.toLowerCase().includes(filter.toLowerCase())) : members;
  const me = hello.user?.id;

  function add() {
    const principal = candidate.trim();
    if (!principal || members.includes(principal)) return setCandidate('');
    setMembers([...members, principal]);
    setCandidate('');
  }

  const save = () => put({ ...group, members });

  return (
    <section class="members" aria-label="Members">
      <div class="toolbar">
        <input
          type="search"
          class="search"
          placeholder="Filter members…"
          aria-label="Filter members"
          value={filter}
          onInput={(event) => setFilter(event.currentTarget.value)}
        />
        <span class="muted small">{plural(members.length, 'member')}</span>
      </div>
      {members.length === 0 ? <p class="muted">No member yet.</p> : null}
      <MemberList
        members={shown}
        me={me}
        onRemove={readonly ? null : (member) => setMembers(members.filter((item) => item !== member))}
      />
      {!readonly ? (
        <form class="grant-form" onSubmit={onSubmit(add)}>
          <PrincipalInput
            label="Add a member"
            listId="member-suggestions"
            placeholder="account:alice"
            value={candidate}
            onInput={setCandidate}
            suggestions={['system.Authenticated', ...(me ? [me] : [])]}
            grow
          />
          <button type="submit" class="button secondary" disabled={!candidate.trim()}>
            Add
          </button>
        </form>
      ) : null}
      <EditActions
        saving={saving}
        dirty={dirty}
        saveLabel="Save members"
        onSave={() => void save()}
        onUndo={() => setMembers(saved)}
      />
      {conflictDialog('group')}
    </section>
  );
}

function MemberList({
  members,
  me,
  onRemove,
}: {
  members: string[];
  me: string | undefined;
  /** Null: members cannot be removed (a read-only server). */
  onRemove: ((member: string) => void) | null;
}) {
  return (
    <ul class="member-list" aria-label="Group members">
      {members.map((member) => (
        <li key={member}>
          <span class="member-who">
            <Principal principal={member} me={me} />
            <Code>{member}</Code>
          </span>
          {onRemove ? (
            <button
              type="button"
              class="button ghost small"
              aria-label={`Remove member ${member}`}
              onClick={() => onRemove(member)}
            >
              Remove
            </button>
          ) : null}
        </li>
      ))}
    </ul>
  );
}
