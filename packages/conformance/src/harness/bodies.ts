/**
 * The JSON bodies of the protocol, typed as a conforming server sends them. Nothing checks a
 * body against its type on arrival: the type is what the test expects (`get<ListBody>(…)`;
 * requests default to one object's body), and the test's expectations are what check it, so a
 * body of another shape fails them, or fails the test with a TypeError on the way.
 */

/** An object's permissions by name (`read`, `write`, `collection:create`…): principals. */
export type Permissions = Record<string, string[]>;

/** An object as the protocol returns it: id, timestamp, and the fields it was given. */
export interface KintoObject {
  id: string;
  last_modified: number;
  /** Only on tombstones (§5.5). */
  deleted?: true;
  [field: string]: unknown;
}

/** The body of one object's endpoints (§4): its data and permissions. */
export interface ObjectBody {
  data: KintoObject;
  permissions: Permissions;
}

/** A page of a list (§7): the objects, tombstones among them with `_since`. */
export interface ListBody<Item = KintoObject> {
  data: Item[];
}

/** The error envelope (§1.1); `details` differ by error (§1.3 validation: a list). */
export interface ErrorBody<Details = unknown> {
  code: number;
  errno: number;
  error: string;
  message?: string;
  info?: string;
  details?: Details;
}

/** One item of the `details` of a validation error (§1.3). */
export interface ValidationDetailItem {
  location: string;
  name?: string | null;
  description: string;
}

/** A validation error (§1.3): errno 107, `details` a list. */
export interface ValidationErrorBody extends ErrorBody<ValidationDetailItem[]> {
  details: ValidationDetailItem[];
}

/** `GET /` (§11): the server, its capabilities and settings, and the caller when authenticated. */
export interface RootBody {
  project_name: string;
  project_version: string;
  project_docs: string;
  http_api_version: string;
  url: string;
  settings: Record<string, unknown>;
  capabilities: Record<string, Record<string, unknown>>;
  user?: RootUser;
  [field: string]: unknown;
}

/** The caller, in `GET /` (§9.1): its user id, principals and, with default_bucket, bucket. */
export interface RootUser {
  id: string;
  principals: string[];
  bucket?: string;
}

/** `GET /` as an authenticated caller gets it. */
export interface AuthenticatedRootBody extends RootBody {
  user: RootUser;
}

/** One response of a batch (§8.3); its body is of the sub-request's kind. */
export interface BatchResponse<Body = ObjectBody> {
  status: number;
  path: string;
  headers: Record<string, string>;
  body: Body;
}

/** The body of `POST /batch` (§8.3). */
export interface BatchBody<Body = ObjectBody> {
  responses: BatchResponse<Body>[];
}
