/** `GET /v1/`: what this server is and who the caller is (protocol-reference §11.1). */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { setCacheHeaders } from '../http/cache-headers.js';
import { baseUrl } from '../http/base-url.js';
import { registerMethods } from '../engine/routes.js';
import { INPUT_SETTINGS } from '../engine/settings.js';
import type { SettingName } from '../config.js';

/** The request budgets beside the URL's input limits (README's budgets table), shown in `settings`. */
const BUDGET_SETTINGS = [
  'max_header_bytes',
  'max_body_bytes',
  'max_json_depth',
  'max_json_keys',
  'batch_max_response_bytes',
  'batch_timeout_seconds',
  'storage_statement_timeout_ms',
  'storage_pool_max_share',
  'storage_pool_max_share_per_address',
  'storage_costly_statements_per_identity',
  'storage_costly_statements_per_address',
  'max_requests_in_progress_per_identity',
  'max_requests_queued_per_identity',
  'requests_queue_timeout_seconds',
] as const satisfies readonly SettingName[];

export const HTTP_API_VERSION = '1.22';

export function registerHello(app: FastifyInstance): void {
  const { settings, version, capabilities } = app.services;

  registerMethods(app, '/v1/', {
    GET: async (request: FastifyRequest, reply: FastifyReply) => {
      // A read-only server's description changes only with its settings (§11.1).
      if (settings.readonly) setCacheHeaders(reply, settings.root_cache_expires_seconds);
      const body: Record<string, unknown> = {
        project_name: settings.project_name,
        project_version: version,
        http_api_version: HTTP_API_VERSION,
        project_docs: settings.project_docs,
        url: `${baseUrl(app.services.settings, request)}/v1/`,
        settings: {
          batch_max_requests: settings.batch_max_requests,
          readonly: settings.readonly,
          explicit_permissions: settings.explicit_permissions,
          max_object_id_length: settings.max_object_id_length,
          max_page_bytes: settings.max_page_bytes,
          // What a request may send or cost, so that a client can stay within it (README: the budgets).
          ...Object.fromEntries(
            [...Object.keys(INPUT_SETTINGS), ...BUDGET_SETTINGS].map((name) => [name, settings[name as SettingName]]),
          ),
        },
        capabilities: Object.fromEntries(
          Object.entries(capabilities).map(([name, entry]) => [
            name,
            typeof entry === 'function' ? entry(request) : entry,
          ]),
        ),
      };
      const { userId, principals } = request.identity;
      if (userId !== null) {
        const bucket = app.services.personalBucketId?.(userId);
        body.user = { id: userId, principals, ...(bucket ? { bucket } : {}) };
      }
      if (settings.eos) body.eos = settings.eos;
      return body;
    },
  });
}
