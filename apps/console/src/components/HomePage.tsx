/** Overview: who you are (user id, principals) and what the server is (version, settings, capabilities). */
import { href } from '../lib/router.js';
import { useConsole } from './context.js';
import { Code, PageHeader, Principal } from './ui.js';

const CAPABILITY_NAMES: Record<string, string> = {
  accounts: 'Accounts',
  admin: 'Admin console',
  basicauth: 'Basic Auth',
  default_bucket: 'Personal bucket',
  flush_endpoint: 'Flush endpoint',
  history: 'History',
  openid: 'OpenID Connect',
  permissions_endpoint: 'Permissions endpoint',
  schema: 'JSON schema validation',
};

export function HomePage() {
  const { hello } = useConsole();

  return (
    <div class="page">
      <PageHeader title="Overview">
        {hello.project_name} at <Code>{hello.url}</Code>
      </PageHeader>

      <div class="grid two">
        <WhoCard />

        <ServerCard />
      </div>

      <CapabilitiesCard />
    </div>
  );
}

/** The signed-in user: id, how they signed in, personal bucket, principals. */
function WhoCard() {
  const { hello, session } = useConsole();
  const user = hello.user;
  const extraPrincipals = user?.principals?.filter((principal) => principal !== user.id) ?? [];
  return (
    <section class="card" aria-labelledby="who-title">
      <h2 id="who-title">Who you are</h2>
      {user ? (
        <>
          <dl class="facts">
            <dt>User id</dt>
            <dd>
              <Code>{user.id}</Code>
            </dd>
            <dt>Signed in with</dt>
            <dd>
              {session.kind === 'account'
                ? 'an account'
                : session.kind === 'basicauth'
                  ? 'Basic Auth'
                  : session.kind === 'openid'
                    ? `OpenID (${session.label})`
                    : session.kind}
            </dd>
            {user.bucket ? (
              <>
                <dt>Personal bucket</dt>
                <dd>
                  <a href={href.bucket(user.bucket)}>
                    <Code>{user.bucket}</Code>
                  </a>
                </dd>
              </>
            ) : null}
          </dl>
          <h3>Your principals</h3>
          <p class="muted small">Permissions granted to any of these apply to you.</p>
          <ul class="principal-list" aria-label="Your principals">
            <li>
              <Principal principal={user.id} me={user.id} />
            </li>
            {extraPrincipals.map((principal) => (
              <li key={principal}>
                {principal.startsWith('/buckets/') ? (
                  <a href={`#${principal}`}>
                    <Principal principal={principal} />
                  </a>
                ) : (
                  <Principal principal={principal} />
                )}
              </li>
            ))}
          </ul>
          {'permissions_endpoint' in hello.capabilities ? (
            <p class="small card-link">
              <a href={href.access()}>What can you do? See everything you have access to →</a>
            </p>
          ) : null}
        </>
      ) : (
        <p>You are not signed in: you see what is public (granted to Everyone).</p>
      )}
    </section>
  );
}

/** What the server says of itself (`GET /`). */
function ServerCard() {
  const { hello } = useConsole();
  return (
    <section class="card" aria-labelledby="server-title">
      <h2 id="server-title">Server</h2>
      <dl class="facts">
        <dt>Project</dt>
        <dd>
          {hello.project_name} {hello.project_version}
        </dd>
        <dt>API version</dt>
        <dd>{hello.http_api_version}</dd>
        <dt>URL</dt>
        <dd>
          <Code>{hello.url}</Code>
        </dd>
        <dt>Batch size</dt>
        <dd>
          {hello.settings.batch_max_requests ? `${hello.settings.batch_max_requests} requests per batch` : 'unlimited'}
        </dd>
        <dt>Mode</dt>
        <dd>
          {hello.settings.readonly ? (
            <span class="badge warn">read-only</span>
          ) : (
            <span class="badge ok">read-write</span>
          )}
        </dd>
        {hello.settings.explicit_permissions !== undefined ? (
          <>
            <dt>Authors</dt>
            <dd>
              {hello.settings.explicit_permissions
                ? 'get write permission on what they create or change'
                : 'get no permission by writing'}
            </dd>
          </>
        ) : null}
        {hello.project_docs ? (
          <>
            <dt>Documentation</dt>
            <dd>
              <a href={hello.project_docs} target="_blank" rel="noreferrer">
                {hello.project_docs}
              </a>
            </dd>
          </>
        ) : null}
      </dl>
    </section>
  );
}

function CapabilitiesCard() {
  const { hello } = useConsole();
  const capabilities = Object.entries(hello.capabilities).sort(([a], [b]) => a.localeCompare(b));
  return (
    <section class="card" aria-labelledby="capabilities-title">
      <h2 id="capabilities-title">Capabilities</h2>
      <ul class="capabilities">
        {capabilities.map(([name, capability]) => (
          <li key={name}>
            <div class="capability-name">
              {CAPABILITY_NAMES[name] ?? `${name[0]!.toUpperCase()}${name.slice(1).replace(/_/g, ' ')}`}{' '}
              <Code>{name}</Code>
              {typeof capability.version === 'string' ? <span class="muted small"> v{capability.version}</span> : null}
            </div>
            <div class="muted small">
              {capability.description ?? ''}
              {capability.url ? (
                <>
                  {' '}
                  <a href={capability.url} target="_blank" rel="noreferrer">
                    Docs
                  </a>
                </>
              ) : null}
            </div>
          </li>
        ))}
      </ul>
    </section>
  );
}
