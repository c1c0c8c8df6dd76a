/**
 * @quire/conformance: a deployment-agnostic HTTP conformance suite for the Kinto protocol
 * (API 1.22). The suites live in `src/suites`; this entry exposes the harness for tooling.
 */
export { baseUrl, serverRoot, normaliseBaseUrl, target } from './harness/config.js';
export { request, basic, url, qs, type RequestOptions, type HttpResponse } from './harness/http.js';
export { createUser, userId, type User } from './harness/users.js';
export { serverInfo, type ServerInfo, type PublicSettings } from './harness/capabilities.js';
