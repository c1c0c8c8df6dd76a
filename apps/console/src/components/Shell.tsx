/** The frame of every signed-in page: navigation on the left, where you are and who you are on top. */
import type { ComponentChildren } from 'preact';
import { href, type Route } from '../lib/router.js';
import { describePrincipal } from '../lib/permissions.js';
import { useCapabilities, useConsole } from './context.js';
import { icons } from './icons.js';

interface Crumb {
  label: string;
  href?: string;
  kind?: string;
}

function crumbsOf(route: Route): Crumb[] {
  switch (route.name) {
    case 'buckets':
      return [{ label: 'Buckets' }];
    case 'bucket':
      return [
        { label: 'Buckets', href: href.buckets() },
        { label: route.bid, kind: 'bucket' },
      ];
    case 'collection': {
      const crumbs: Crumb[] = [
        { label: 'Buckets', href: href.buckets() },
        { label: route.bid, href: href.bucket(route.bid), kind: 'bucket' },
        {
          label: route.cid,
          href: route.rid || route.isNew ? href.collection(route.bid, route.cid, 'records', route.query) : undefined,
          kind: 'collection',
        },
      ];
      if (route.rid) crumbs.push({ label: route.rid, kind: 'record' });
      if (route.isNew) crumbs.push({ label: 'New record' });
      return crumbs;
    }
    case 'group':
      return [
        { label: 'Buckets', href: href.buckets() },
        { label: route.bid, href: href.bucket(route.bid), kind: 'bucket' },
        { label: 'Groups', href: href.bucket(route.bid, 'groups') },
        { label: route.gid, kind: 'group' },
      ];
    case 'access':
      return [{ label: 'My access' }];
    case 'accounts':
      return [{ label: 'Accounts' }];
    default:
      return [{ label: 'Overview' }];
  }
}

function NavLink({
  to,
  active,
  children,
  icon,
}: {
  to: string;
  active: boolean;
  children: ComponentChildren;
  icon: ComponentChildren;
}) {
  return (
    <a href={to} class={active ? 'nav-link active' : 'nav-link'} aria-current={active ? 'page' : undefined}>
      <span class="nav-icon">{icon}</span>
      {children}
    </a>
  );
}

export function Shell({
  route,
  onSignOut,
  children,
}: {
  route: Route;
  onSignOut: () => void;
  children: ComponentChildren;
}) {
  const { hello, session } = useConsole();
  const capabilities = useCapabilities();
  const bid = route.name === 'bucket' || route.name === 'collection' || route.name === 'group' ? route.bid : null;
  const host = (() => {
    try {
      return new URL(session.server).host;
    } catch {
      return session.server;
    }
  })();
  const crumbs = crumbsOf(route);

  return (
    <div class="shell">
      <aside class="sidebar">
        <a class="brand" href="#/">
          <img src="./favicon.svg" alt="" width={26} height={26} />
          <span class="brand-name">Quire Console</span>
        </a>
        <nav class="nav" aria-label="Console">
          <NavLink to={href.home()} active={route.name === 'home'} icon={icons.overview}>
            Overview
          </NavLink>
          <NavLink to={href.buckets()} active={route.name === 'buckets'} icon={icons.buckets}>
            Buckets
          </NavLink>
          {capabilities.permissionsEndpoint ? (
            <NavLink to={href.access()} active={route.name === 'access'} icon={icons.access}>
              My access
            </NavLink>
          ) : null}
          {capabilities.accounts ? (
            <NavLink to={href.accounts()} active={route.name === 'accounts'} icon={icons.accounts}>
              Accounts
            </NavLink>
          ) : null}
        </nav>
        {bid ? <BucketNav bid={bid} route={route} /> : null}
        <div class="sidebar-foot">
          <div class="server-line" title={session.server}>
            <span class={hello.settings.readonly ? 'dot warn' : 'dot ok'} aria-hidden="true" />
            {host}
          </div>
          <div class="muted small">
            {hello.project_name} {hello.project_version}
            {hello.settings.readonly ? ' · read-only' : ''}
          </div>
        </div>
      </aside>
      <div class="main">
        <header class="topbar">
          <Breadcrumbs crumbs={crumbs} />
          <WhoAmI onSignOut={onSignOut} />
        </header>
        {hello.eos ? (
          <div class="banner warning" role="note">
            This server announces its end of service on {hello.eos}.
          </div>
        ) : null}
        <main class="content">{children}</main>
      </div>
    </div>
  );
}

/** The sections of the bucket the route is in. */
function BucketNav({ bid, route }: { bid: string; route: Route }) {
  const capabilities = useCapabilities();
  return (
    <nav class="nav nav-bucket" aria-label={`Bucket ${bid}`}>
      <div class="nav-section" title={bid}>
        Bucket <strong>{bid}</strong>
      </div>
      <NavLink
        to={href.bucket(bid)}
        active={route.name === 'collection' || (route.name === 'bucket' && route.tab === 'collections')}
        icon={icons.collections}
      >
        Collections
      </NavLink>
      <NavLink
        to={href.bucket(bid, 'groups')}
        active={route.name === 'group' || (route.name === 'bucket' && route.tab === 'groups')}
        icon={icons.groups}
      >
        Groups
      </NavLink>
      {capabilities.history ? (
        <NavLink
          to={href.bucket(bid, 'history')}
          active={route.name === 'bucket' && route.tab === 'history'}
          icon={icons.history}
        >
          History
        </NavLink>
      ) : null}
      <NavLink
        to={href.bucket(bid, 'permissions')}
        active={route.name === 'bucket' && route.tab === 'permissions'}
        icon={icons.permissions}
      >
        Permissions
      </NavLink>
      <NavLink
        to={href.bucket(bid, 'attributes')}
        active={route.name === 'bucket' && route.tab === 'attributes'}
        icon={icons.attributes}
      >
        Attributes
      </NavLink>
    </nav>
  );
}

function Breadcrumbs({ crumbs }: { crumbs: ReturnType<typeof crumbsOf> }) {
  return (
    <nav class="breadcrumbs" aria-label="Breadcrumbs">
      {crumbs.map((crumb, index) => (
        <span key={index} class="crumb">
          {index > 0 ? <span class="crumb-sep">/</span> : null}
          {crumb.href ? (
            <a href={crumb.href}>{crumb.label}</a>
          ) : (
            <span aria-current={index === crumbs.length - 1 ? 'page' : undefined}>{crumb.label}</span>
          )}
        </span>
      ))}
    </nav>
  );
}

/** Who is signed in, and the way out. */
function WhoAmI({ onSignOut }: { onSignOut: () => void }) {
  const { hello, session } = useConsole();
  const user = hello.user;
  const who = user ? describePrincipal(user.id) : null;
  // Basic Auth ids are hashes: show the name typed at sign-in instead.
  const displayName = who ? (session.kind === 'basicauth' ? session.label : who.title) : '';
  return (
    <div class="who">
      {who ? (
        <span class="who-name" title={user?.id}>
          <span class="avatar" aria-hidden="true">
            {displayName.slice(0, 1).toUpperCase()}
          </span>
          <span>
            Signed in as <strong>{displayName}</strong>
          </span>
        </span>
      ) : (
        <span class="who-name">Not signed in (anonymous)</span>
      )}
      <button type="button" class="button secondary small" onClick={onSignOut}>
        Sign out
      </button>
    </div>
  );
}
