/*
 * The MCP tools, made from the contract once at start (docs/mcp-server.md#tools-from-the-contract):
 * one tool per `/v1` operation an access token may call whose answer is JSON, named by its
 * operationId, described by its summary, taking one flat object of its path, query and header
 * parameters by name and its body as `body`. Nothing here names an operation: a new operation in
 * openapi/ becomes a tool, or not, by what the contract says of it.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** The parts of an OpenAPI document the derivation reads. */
export interface ContractDocument {
  paths?: Record<string, Record<string, unknown> | undefined>;
  components?: Record<string, unknown>;
  security?: Record<string, unknown>[];
}

/** What the contract may say about who calls an operation (src/server/access.ts reads the same). */
interface OperationObject {
  operationId?: string;
  summary?: string;
  security?: Record<string, unknown>[];
  parameters?: JsonObject[];
  requestBody?: JsonObject;
  responses?: Record<string, JsonObject>;
  'x-access'?: unknown;
  'x-destructive'?: unknown;
}

export interface ToolParameter {
  name: string;
  in: 'path' | 'query' | 'header';
}

/** One tool: what `tools/list` shows (`tool`) and what `tools/call` needs to run its operation. */
export interface ToolSpec {
  operationId: string;
  method: string;
  path: string;
  parameters: readonly ToolParameter[];
  /** The operation takes a JSON body (the `body` argument). */
  takesBody: boolean;
  /** A GET: listed and callable while the organization's policy has `writes: false`. */
  reads: boolean;
  /** DELETE, or `x-destructive: true`: runs only with `confirm: true`, otherwise a dry run. */
  destructive: boolean;
  /** The MCP Tool object, as `tools/list` answers it. */
  tool: { name: string; description: string; inputSchema: JsonObject; annotations: JsonObject };
}

/** The security scheme of an OAuth access token, once the contract declares one. */
export const ACCESS_TOKEN_SCHEME = 'oauthAccessToken';
const WORKER_SCHEME = 'workerToken';
const SESSION_SCHEME = 'bearerAuth';
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;
const JSON_TYPES = new Set(['application/json']);
/** Keys of OpenAPI's schema dialect that are not JSON Schema: left out of input schemas. */
const OPENAPI_ONLY = new Set(['example', 'discriminator', 'xml', 'externalDocs']);
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
const CONFIRM_SCHEMA: JsonObject = {
  type: 'boolean',
  description: 'true to do it. Without it the call changes nothing and answers what it would do (a dry run).',
};

/**
 * The security scheme a tool call's principal is given as (src/server/router.ts `invoke`), and the
 * test of which operations a token may call. With the contract's `oauthAccessToken` scheme: the
 * operations that list it. Without it (a contract before the authorization server): the
 * operations a session may call that are not session only (bearerAuth alone), not fresh-session
 * (403 `fresh_session_required`), not public and not the caller's own account.
 */
export function tokenScheme(doc: ContractDocument): string {
  const schemes = (doc.components?.securitySchemes ?? {}) as Record<string, unknown>;
  return ACCESS_TOKEN_SCHEME in schemes ? ACCESS_TOKEN_SCHEME : SESSION_SCHEME;
}

function tokenMayCall(doc: ContractDocument, scheme: string, op: OperationObject, path: string): boolean {
  const requirements = op.security ?? doc.security ?? [];
  if (requirements.length === 0 || requirements.some((requirement) => Object.keys(requirement).length === 0)) return false;
  const schemes = new Set(requirements.flatMap((requirement) => Object.keys(requirement)));
  if (!schemes.has(scheme)) return false;
  // A worker's own routes (heartbeat, activity, its LLM configuration) are the worker runtime's,
  // called by the worker itself, even where a token it exchanged is also taken: not tools.
  if (schemes.has(WORKER_SCHEME)) return false;
  if (scheme === ACCESS_TOKEN_SCHEME) return true;
  if (schemes.size === 1) return false; // session only
  if (op['x-access'] === 'account' || path === '/v1/me' || path.startsWith('/v1/me/')) return false;
  const forbidden = op.responses?.['403'];
  return !(forbidden && mentions(inline(doc, forbidden, []), 'fresh_session_required'));
}

/** Every tool of the contract, in the contract's order. Throws on an operation it cannot make a tool of (a start fails). */
export function deriveTools(doc: ContractDocument): ToolSpec[] {
  const scheme = tokenScheme(doc);
  const tools: ToolSpec[] = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    if (!path.startsWith('/v1/') || !item) continue;
    const shared = (item.parameters ?? []) as JsonObject[];
    for (const method of METHODS) {
      const op = item[method] as OperationObject | undefined;
      if (!op?.operationId || !tokenMayCall(doc, scheme, op, path) || !answersJson(doc, op)) continue;
      tools.push(toolOf(doc, path, method, op, shared));
    }
  }
  return tools;
}

function toolOf(doc: ContractDocument, path: string, method: string, op: OperationObject, shared: JsonObject[]): ToolSpec {
  const name = op.operationId!;
  const refuse = (problem: string) => new Error(`MCP tool ${name}: ${problem} (docs/mcp-server.md#tools-from-the-contract)`);
  if (!TOOL_NAME.test(name)) throw refuse('its operationId is not a valid tool name');
  const properties: JsonObject = Object.create(null);
  const required: string[] = [];
  const parameters: ToolParameter[] = [];
  // An operation's own parameter replaces a path item's of the same name and place (OpenAPI).
  const byKey = new Map<string, JsonObject>();
  for (const raw of [...shared, ...(op.parameters ?? [])]) {
    const parameter = resolve(doc, raw) as JsonObject;
    byKey.set(`${String(parameter.in)}:${String(parameter.name)}`, parameter);
  }
  for (const parameter of byKey.values()) {
    const where = parameter.in;
    if (where !== 'path' && where !== 'query' && where !== 'header') continue;
    const key = String(parameter.name);
    if (key === 'body' || key === 'confirm' || Object.prototype.hasOwnProperty.call(properties, key)) throw refuse(`parameter ${key} clashes with another argument`);
    const schema = inline(doc, parameter.schema ?? {}, []) as JsonObject;
    if (typeof parameter.description === 'string' && schema.description === undefined) schema.description = parameter.description;
    properties[key] = schema;
    parameters.push({ name: key, in: where });
    if (where === 'path' || parameter.required === true) required.push(key);
  }
  const body = op.requestBody ? (resolve(doc, op.requestBody) as JsonObject) : undefined;
  if (body) {
    const content = (body.content ?? {}) as JsonObject;
    const json = content['application/json'] as JsonObject | undefined;
    properties.body = inline(doc, json?.schema ?? {}, []);
    if (body.required === true) required.push('body');
  }
  const destructive = method === 'delete' || op['x-destructive'] === true;
  if (destructive) properties.confirm = CONFIRM_SCHEMA;
  const reads = method === 'get';
  const inputSchema: JsonObject = { type: 'object', properties, additionalProperties: false };
  if (required.length > 0) inputSchema.required = required;
  const annotations: JsonObject = { readOnlyHint: reads, destructiveHint: destructive, idempotentHint: reads || method === 'put' || method === 'delete', openWorldHint: false };
  return {
    operationId: name,
    method: method.toUpperCase(),
    path,
    parameters,
    takesBody: body !== undefined,
    reads,
    destructive,
    tool: { name, description: op.summary ?? name, inputSchema, annotations },
  };
}

/** Every 2xx answer is JSON or empty, and any body it takes is JSON (downloads, CSV, NDJSON and forms are not tools). */
function answersJson(doc: ContractDocument, op: OperationObject): boolean {
  if (op.requestBody) {
    const content = ((resolve(doc, op.requestBody) as JsonObject).content ?? {}) as JsonObject;
    if (!Object.keys(content).every((type) => JSON_TYPES.has(type))) return false;
  }
  const successes = Object.entries(op.responses ?? {}).filter(([status]) => /^2\d\d$/.test(status));
  if (successes.length === 0) return false;
  return successes.every(([, raw]) => Object.keys(((resolve(doc, raw) as JsonObject).content ?? {}) as JsonObject).every((type) => JSON_TYPES.has(type)));
}

/** A `$ref` object, followed (one level at a time) to what it names in the document. */
function resolve(doc: ContractDocument, value: Json | undefined): Json | undefined {
  let current = value;
  for (let hops = 0; isRef(current); hops++) {
    if (hops > 20) throw new Error(`MCP tools: ${current.$ref} does not resolve`);
    current = lookup(doc, current.$ref);
  }
  return current;
}

function isRef(value: Json | undefined): value is { $ref: string } {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && typeof value.$ref === 'string';
}

function lookup(doc: ContractDocument, ref: string): Json {
  if (!ref.startsWith('#/')) throw new Error(`MCP tools: only local references are supported (${ref})`);
  let node: unknown = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    node = node !== null && typeof node === 'object' && Object.prototype.hasOwnProperty.call(node, key) ? (node as Record<string, unknown>)[key] : undefined;
    if (node === undefined) throw new Error(`MCP tools: ${ref} does not resolve`);
  }
  return node as Json;
}

/**
 * A schema with every reference replaced by what it names (clients read one self-contained
 * schema per tool), without OpenAPI's own keywords and extensions. A reference to a schema it is
 * already inside (a recursive schema) throws: no `/v1` operation takes one.
 */
function inline(doc: ContractDocument, schema: Json, inside: string[]): Json {
  if (Array.isArray(schema)) return schema.map((value) => inline(doc, value, inside));
  if (schema === null || typeof schema !== 'object') return schema;
  if (isRef(schema)) {
    if (inside.includes(schema.$ref)) throw new Error(`MCP tools: ${schema.$ref} is recursive`);
    return inline(doc, lookup(doc, schema.$ref), [...inside, schema.$ref]);
  }
  const out: JsonObject = Object.create(null);
  for (const [key, value] of Object.entries(schema)) {
    if (OPENAPI_ONLY.has(key) || key.startsWith('x-')) continue;
    // Under `properties` the keys are field names (a field may be called `example`), not keywords.
    out[key] = key === 'properties' && value !== null && typeof value === 'object' && !Array.isArray(value) ? fields(doc, value, inside) : inline(doc, value, inside);
  }
  return out;
}

function fields(doc: ContractDocument, properties: JsonObject, inside: string[]): JsonObject {
  const out: JsonObject = Object.create(null);
  for (const [name, schema] of Object.entries(properties)) out[name] = inline(doc, schema, inside);
  return out;
}

/** Whether a JSON value holds `word` as an enum or const value anywhere (a 403's reasons). */
function mentions(value: Json | undefined, word: string): boolean {
  if (Array.isArray(value)) return value.some((item) => mentions(item, word));
  if (value === null || typeof value !== 'object') return false;
  if (value.const === word || (Array.isArray(value.enum) && value.enum.includes(word))) return true;
  return Object.values(value).some((item) => mentions(item, word));
}
