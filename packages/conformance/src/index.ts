/**
 * @quire/conformance: a deployment-agnostic HTTP conformance suite for the Kinto protocol
 * (API 1.22). The suites live in `src/suites`; `runConformance` runs them against a base URL
 * and returns the report (the `quire-conformance` CLI is a thin layer over it); the harness is
 * exported for tooling.
 */
export {
  runConformance,
  invocationDir,
  reportDir,
  REPORT_FORMATS,
  type RunOptions,
  type RunResult,
  type ReportFormat,
} from './run.js';
export { readServer, cleanupJournal, type Credentials } from './target.js';
export {
  parseExpectations,
  loadExpectations,
  resolveExpectations,
  shippedExpectations,
  type Expectations,
  type Deviation,
} from './report/expectations.js';
export type { RunReport, TestOutcome, SectionSummary, Outcome, FailureDetail, ServerSummary } from './report/model.js';
export { toJson } from './report/json.js';
export { toJUnit } from './report/junit.js';
export { toHtml } from './report/html.js';
export { toTable } from './report/table.js';
export { baseUrl, serverRoot, normaliseBaseUrl } from './harness/config.js';
export {
  request,
  basic,
  url,
  qs,
  SkipSignal,
  type Identity,
  type RequestOptions,
  type HttpResponse,
  type RecordedExchange,
} from './harness/http.js';
export type {
  KintoObject,
  Permissions,
  ObjectBody,
  ListBody,
  ErrorBody,
  ValidationErrorBody,
  ValidationDetailItem,
  RootBody,
  RootUser,
  AuthenticatedRootBody,
  BatchBody,
  BatchResponse,
} from './harness/bodies.js';
export { createUser, userId, usesGivenCredentials, type User } from './harness/users.js';
export { serverInfo, type ServerInfo, type PublicSettings } from './harness/capabilities.js';
