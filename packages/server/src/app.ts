/**
 * buildServer(): the Fastify app with every plugin registered in order. It never listens;
 * `cli.ts` does, tests use `inject()` or `listen({ port: 0 })`.
 */
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import { createAccountPolicy, registerAccounts } from './accounts/index.js';
import { registerAttachments } from './attachments/index.js';
import { authenticate } from './auth/authenticate.js';
import { createBasicAuthPolicy } from './auth/basicauth.js';
import { createOpenIdPolicy, registerOpenId } from './auth/openid/index.js';
import { ANONYMOUS, type AuthPolicy } from './auth/policy.js';
import { ConfigError, loadSettings, type Settings } from './config.js';
import { ApiError, ERRNO } from './errors.js';
import { EventBus } from './events/bus.js';
import { MONITOR_PATH, registerChanges } from './changes/index.js';
import { registerHistory } from './history/index.js';
import { registerQuotas } from './quotas/index.js';
import { createClientErrorHandler, refuseConnect, refuseExpectation } from './http/client-errors.js';
import { registerContentNegotiation } from './http/content.js';
import { registerQueryLimits } from './http/query-limits.js';
import { admitRequest, FairAdmission } from './http/fair-admission.js';
import { sessionBudget, sessionOwner } from './http/session-budget.js';
import { registerErrorHandler, toApiError } from './http/error-handler.js';
import { registerHeaders } from './http/headers.js';
import { createNotFoundHandler } from './http/redirects.js';
import { Metrics, registerMetrics } from './observability/metrics.js';
import { loggerOptions, registerRequestLog } from './observability/request-log.js';
import { splitUrl } from './http/url.js';
import { createListeners } from './listeners/config.js';
import { Authorizer } from './permission/authorizer.js';
import { dispatchedWork } from './http/internal-requests.js';
import type { Services } from './request-context.js';
import { baseUrl } from './http/base-url.js';
import { extendResource } from './engine/extensions.js';
import { registerResource } from './engine/routes.js';
import { RESOURCES } from './resources/registry.js';
import { SCHEMA_CAPABILITY } from './schema/validator.js';
import { PARTIAL_REPLICAS_CAPABILITY } from './engine/unmatched.js';
import type { Storage } from './storage/types.js';
import { UnitOfWork } from './unit-of-work.js';
import { registerAdmin } from './views/admin.js';
import { registerBatch } from './views/batch.js';
import { registerDefaultBucket } from './views/default-bucket.js';
import { registerHello } from './views/hello.js';
import { registerOpenApi } from './views/openapi.js';
import { registerPermissions } from './views/permissions.js';
import { registerUtilities } from './views/utilities.js';
import { VERSION } from './version.js';

export interface BuildServerOptions {
  /** Settings (default: loaded from the environment). */
  settings?: Settings;
  /** The store; the caller owns it and closes it (buildServer never creates one). */
  storage: Storage;
  /** pino logger options, or false for none (default: `settings.log_level`). */
  logger?: boolean | Record<string, unknown>;
}

function createPolicies(settings: Settings): AuthPolicy[] {
  return settings.multiauth_policies.map((name) => {
    switch (name) {
      case 'basicauth':
        if (settings.userid_hmac_secret === null)
          throw new ConfigError('Setting userid_hmac_secret is required by the basicauth policy');
        return createBasicAuthPolicy(settings.userid_hmac_secret);
      case 'account':
        return createAccountPolicy(settings);
      default: {
        // Any other name is an OpenID Connect provider of `openid_providers`.
        const openid = createOpenIdPolicy(settings, name);
        if (openid) return openid;
        throw new ConfigError(`Unknown authentication policy ${name}`);
      }
    }
  });
}

/** The capabilities a setting turns on (the features that register themselves add theirs). */
function settingCapabilities(settings: Settings): Record<string, { description: string; url: string }> {
  return {
    ...(settings.experimental_collection_schema_validation ? { schema: { ...SCHEMA_CAPABILITY } } : {}),
    ...(settings.partial_replicas_enabled ? { partial_replicas: { ...PARTIAL_REPLICAS_CAPABILITY } } : {}),
  };
}

export async function buildServer(options: BuildServerOptions): Promise<FastifyInstance> {
  const settings = options.settings ?? loadSettings();
  let app: FastifyInstance | undefined;
  const events = new EventBus(() => app?.log);
  const services = await createServices(settings, options.storage, events);
  app = Fastify(fastifyOptions(settings, options.logger));
  app.decorate('services', services);
  app.server.on('checkExpectation', refuseExpectation);
  app.server.on('connect', refuseConnect);
  // Configured listeners, in their settings' order; closing the server flushes what they hold.
  for (const listener of await createListeners(settings.event_listeners, () => app?.log)) events.subscribe(listener);
  app.addHook('onClose', () => events.close());
  registerRequestHooks(app, services, events);
  await registerRoutes(app, services);
  await app.ready();
  return app;
}

/** What every part of the server shares: settings, store, policies, capabilities, events. */
async function createServices(settings: Settings, store: Storage, events: EventBus): Promise<Services> {
  const metrics = settings.metrics_enabled ? new Metrics(store) : null;
  const services: Services = {
    settings,
    storage: metrics ? metrics.instrument(store) : store,
    authorizer: new Authorizer(settings),
    policies: createPolicies(settings),
    version: VERSION,
    capabilities: {},
    events,
    resourceExtensions: [],
    heartbeats: {},
    metrics,
  };
  for (const policy of services.policies) await policy.init?.();
  for (const policy of services.policies) if (policy.capability) services.capabilities[policy.name] = policy.capability;
  Object.assign(services.capabilities, settingCapabilities(settings));
  return services;
}

function fastifyOptions(settings: Settings, logger: BuildServerOptions['logger']) {
  return {
    logger: logger === false ? false : loggerOptions(settings, typeof logger === 'object' ? logger : {}),
    // observability/request-log.ts writes one line per request instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: settings.max_body_bytes,
    // A request without Host is answered (URLs then name the listening address: base-url.ts),
    // rather than with Node's empty-bodied 400.
    http: { maxHeaderSize: settings.max_header_bytes, requireHostHeader: false },
    // What Node's HTTP parser refuses gets the protocol's error body too.
    clientErrorHandler: createClientErrorHandler(settings),
    exposeHeadRoutes: false,
    routerOptions: { maxParamLength: 4096 },
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    // X-Forwarded-* (client address, scheme, host) only behind a proxy that sets them (base-url.ts).
    trustProxy: settings.trust_proxy,
    // Malformed URLs (invalid UTF-8 escapes...) get the protocol's error body (§0).
    frameworkErrors: (error: Error, _request: FastifyRequest, reply: FastifyReply) => {
      const apiError = toApiError(error, settings);
      void reply
        .code(apiError.status as never)
        .type('application/json')
        .send(apiError.toBody() as never);
    },
  };
}

const STREAM_PATH = `/v1${MONITOR_PATH}`;

/** The hooks every request passes, in order: its unit of work, errors, logs, headers, input, identity. */
function registerRequestHooks(app: FastifyInstance, services: Services, events: EventBus): void {
  const { settings } = services;
  app.decorateRequest('identity', null as never);
  app.decorateRequest('work', null as never);
  const admission = new FairAdmission({
    perOwner: settings.max_requests_in_progress_per_identity,
    queued: settings.max_requests_queued_per_identity,
    waitMs: settings.requests_queue_timeout_seconds * 1000,
  });
  // First of all: a batch's sub-request (or a request re-run by this process) joins the unit of
  // work it was given; any other request gets its own.
  app.addHook('onRequest', (request, reply, done) => {
    request.work =
      dispatchedWork(request.raw) ?? new UnitOfWork(services.storage, events, false, sessionBudget(request, reply));
    done();
  });

  registerErrorHandler(app, settings);
  registerRequestLog(app);
  registerMetrics(app, settings, services.metrics);
  registerHeaders(app, settings);
  registerContentNegotiation(app);
  registerQueryLimits(app);
  registerAdmin(app); // before the hook below, which redirects paths ending with `/` such as /v1/admin/
  const notFound = createNotFoundHandler(settings, (request) => baseUrl(services.settings, request));
  app.setNotFoundHandler(notFound);

  app.addHook('onRequest', async (request, reply) => {
    request.identity = ANONYMOUS;
    // No route ends with a slash but the root: let the not-found handler redirect (§0), rather
    // than matching `/v1/buckets/` as a bucket with an empty id.
    const { path } = splitUrl(request.raw.url);
    if (path.length > 4 && path.endsWith('/')) return notFound(request, reply);
    // NUL cannot be stored nor be part of an id: refuse it before it reaches the database.
    if (/%00/.test(path))
      throw new ApiError(400, ERRNO.INVALID_PARAMETERS, { error: 'Bad Request', message: 'Invalid URL path.' });
    // Redirected or not found (§0): answered whoever calls, as the original does — credentials
    // that do not log in must not turn a redirect into a 401.
    if (request.is404) return;
    // One autocommit query per authenticated request; inside a batch, through its transaction
    // (on PGlite the store itself waits for that transaction to end).
    const auth = { headers: request.headers, ip: request.ip, read: request.work.read.bind(request.work) };
    request.identity = await authenticate(services.policies, auth);
    // Then its turn among its owner's requests in progress (fair-admission.ts): a batch's
    // sub-requests are inside their batch's; a change stream lasts and costs little (its own caps:
    // changes/stream-caps.ts). Only on the monitor: elsewhere the header would skip the queue.
    if (
      dispatchedWork(request.raw) ||
      (path === STREAM_PATH && /text\/event-stream/i.test(request.headers.accept ?? ''))
    )
      return;
    const waiting = admitRequest(admission, sessionOwner(request.identity?.userId, request.ip), reply);
    if (waiting) await waiting;
  });
}

/** The views, the features' routes, then the engine's resources (with the features' extensions). */
async function registerRoutes(app: FastifyInstance, services: Services): Promise<void> {
  registerOpenApi(app);
  registerHello(app);
  registerUtilities(app);
  registerBatch(app);
  registerOpenId(app);
  registerPermissions(app);
  registerDefaultBucket(app);
  registerHistory(app);
  registerQuotas(app);
  registerChanges(app);
  registerAccounts(app);
  await registerAttachments(app);
  for (const def of RESOURCES) registerResource(app, extendResource(def, services.resourceExtensions));
}
