import express, { Router, type Request, type Response } from 'express';
import type * as SdkServer from '@modelcontextprotocol/sdk/server/index.js';
import type * as SdkTransport from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type * as SdkTypes from '@modelcontextprotocol/sdk/types.js';
import type * as SdkAjv from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import type { Front, FrontTools } from '../contract/fronts';
import type { HttpResult } from '../contract';
import type { Principal } from '../domain/principal';
import { Invalid, MethodNotAllowed, Unauthorized } from '../lib/errors';
import { lazy } from '../lib/lazy';
import { serializeBody } from '../lib/json-text';
import { jsonShapeProblem } from '../lib/json-shape';
import { principalForResource } from '../principal/access-token';
import { mcpResource, mcpResourceMetadata, mcpResourceMetadataUrl } from '../oauth/resources';
import bundled from '../../generated/openapi.json';
import { deriveTools, tokenScheme, type ContractDocument, type ToolSpec } from './tools';
import { policyOf, type McpPolicy } from './policy';
import { plainListRequest, ToolListing } from './listing';

// The SDK (zod, ajv inside) loads when /mcp first serves a request.
/* eslint-disable @typescript-eslint/no-require-imports */
const sdk = lazy(() => ({
  Server: (require('@modelcontextprotocol/sdk/server/index.js') as typeof SdkServer).Server,
  Transport: (require('@modelcontextprotocol/sdk/server/streamableHttp.js') as typeof SdkTransport).StreamableHTTPServerTransport,
  types: require('@modelcontextprotocol/sdk/types.js') as typeof SdkTypes,
  Validator: (require('@modelcontextprotocol/sdk/validation/ajv-provider.js') as typeof SdkAjv).AjvJsonSchemaValidator,
}));
/* eslint-enable @typescript-eslint/no-require-imports */

/**
 * The control plane as an MCP server (docs/mcp-server.md), a front (src/contract/fronts.ts) on the
 * official SDK: `POST /mcp` speaks streamable HTTP, stateless (a server and a transport per
 * request, answers as JSON; a plain `tools/list` is answered from ./listing.ts's cache), to
 * callers holding an access token issued for `PUBLIC_BASE_URL/mcp`.
 * Its tools are the contract's operations (./tools.ts); a call runs down the API's own dispatch
 * (`tools.invoke`), so its checks, audit entry and events are the HTTP call's.
 */
export const MCP_PATH = '/mcp';
const METADATA_PATH = '/.well-known/oauth-protected-resource/mcp';
/** JSON-RPC's reserved range for a server's own errors: the organization turned MCP off. */
const MCP_DISABLED = -32001;

const contract = bundled as unknown as ContractDocument & { info?: { version?: string } };

export const mcpServerFront: Front = {
  name: 'mcp-server',
  // The body is JSON-RPC: read here, so a malformed one is answered as JSON-RPC's parse error.
  ownBodyPaths: [MCP_PATH],
  mount: (tools) => mcpRouter(tools),
};

/** 401 naming the resource's metadata (RFC 9728 §5.1), so an MCP client discovers where to authorize. */
class McpUnauthenticated extends Unauthorized {
  constructor(private readonly challenge: string) {
    super('An access token for the MCP endpoint is required.');
  }
  override headers() {
    return { 'WWW-Authenticate': this.challenge };
  }
}

function mcpRouter(tools: FrontTools): Router {
  const { deps } = tools;
  const base = deps.settings.publicBaseUrl;
  const resource = mcpResource(base);
  const metadataUrl = mcpResourceMetadataUrl(base);
  const catalogue = deriveTools(contract);
  const byName = new Map(catalogue.map((spec) => [spec.tool.name, spec]));
  const listing = new ToolListing(catalogue);
  const scheme = tokenScheme(contract);
  const version = contract.info?.version ?? '0';
  const json = express.json({ limit: deps.settings.bodyLimitBytes, type: ['application/json', 'application/*+json'] });
  // One JSON Schema validator for every request's server: without one, each `new Server` builds its own Ajv
  // (its keywords, formats and meta-schemas), which was a third of a tools/list's CPU (bench scenario 19).
  const validator = lazy(() => new (sdk().Validator)());

  /** The bearer's principal, or the 401 to answer (no token, or one that is not a live `/mcp` token). */
  async function authenticate(req: Request): Promise<Principal | McpUnauthenticated> {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '');
    if (!match) return new McpUnauthenticated(`Bearer resource_metadata="${metadataUrl}"`);
    const principal = await principalForResource(deps.db, match[1]!, deps.clock.now(), base, resource);
    return principal ?? new McpUnauthenticated(`Bearer error="invalid_token", resource_metadata="${metadataUrl}"`);
  }

  /** The JSON body, or the JSON-RPC error to answer when it is not one (a non-JSON type is left to the transport's 415). */
  function readBody(req: Request, res: Response): Promise<{ body: unknown } | { status: number; message: string; code: number }> {
    return new Promise((resolve) => {
      json(req, res, (err?: unknown) => {
        if (err) {
          const type = (err as { type?: string }).type;
          if (type === 'entity.too.large') return resolve({ status: 413, code: -32600, message: `Request body exceeds ${deps.settings.bodyLimitBytes} bytes.` });
          return resolve({ status: 400, code: -32700, message: 'Parse error: the body is not JSON.' });
        }
        const problem = jsonShapeProblem(req.body);
        if (problem) return resolve({ status: 400, code: -32600, message: `Invalid request: ${problem.path.join('.')}: ${problem.message}.` });
        resolve({ body: req.body as unknown });
      });
    });
  }

  async function serve(req: Request, res: Response): Promise<void> {
    const log = req.log ?? deps.logger;
    // Stateless: no stream to open (GET) and no session to end (DELETE).
    if (req.method !== 'POST') {
      res.setHeader('Allow', 'POST');
      return tools.send(res, tools.errorResult(new MethodNotAllowed(req.method, MCP_PATH), log));
    }
    const principal = await authenticate(req);
    if (principal instanceof McpUnauthenticated) return tools.send(res, tools.errorResult(principal, log));
    const read = await readBody(req, res);
    if ('status' in read) return rpcError(res, read.status, null, read.code, read.message);
    const policy = await policyOf(deps, principal.membership!.organizationId);
    // 403, never 401: a 401 would send the client back to authorize, which cannot help.
    if (!policy.enabled) {
      return rpcError(res, 403, idOf(read.body), MCP_DISABLED, 'MCP is turned off for this organization (PUT /v1/org/mcp-policy with enabled: true turns it on).');
    }

    // What this caller may call now: reading tools, writing ones while the policy allows them, each
    // one the API would not refuse this principal.
    const listed = () => catalogue.map((spec) => (spec.reads || policy.writes) && tools.refusal(spec.operationId, principal) === null);
    const listId = plainListRequest(req, read.body);
    if (listId !== undefined) return listing.send(res, listed(), listId);

    const { Server, Transport, types } = sdk();
    const server = new Server({ name: 'org-control-plane', version }, { capabilities: { tools: {} }, jsonSchemaValidator: validator() });
    server.setRequestHandler(types.ListToolsRequestSchema, () => ({ tools: listing.tools(listed()) }));
    server.setRequestHandler(types.CallToolRequestSchema, async (request) => {
      const spec = byName.get(request.params.name);
      if (!spec) throw new types.McpError(types.ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
      return (await call(spec, request.params.arguments ?? {}, principal, policy, req, res)) as SdkTypes.CallToolResult;
    });
    const transport = new Transport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, read.body);
  }

  /** One tool call: its arguments checked, the policy and the dry run applied, then the operation's own dispatch. */
  async function call(spec: ToolSpec, args: Record<string, unknown>, principal: Principal, policy: McpPolicy, req: Request, res: Response): Promise<ToolResult> {
    const known = new Set([...spec.parameters.map((p) => p.name), ...(spec.takesBody ? ['body'] : []), ...(spec.destructive ? ['confirm'] : [])]);
    const unknown = Object.keys(args).filter((name) => !known.has(name));
    if (unknown.length > 0) return toolResult(tools.errorResult(new Invalid(unknown.map((name) => ({ path: [name], message: 'is not an argument of this tool' })), `Unknown arguments: ${unknown.join(', ')}.`), req.log ?? deps.logger));
    if (args.confirm !== undefined && typeof args.confirm !== 'boolean') return toolResult(tools.errorResult(Invalid.at(['confirm'], 'must be a boolean'), deps.logger));
    if (!spec.reads && !policy.writes) {
      return toolError({ error: 'mcp_writes_disabled', message: `Writes through MCP are off for this organization: only reading tools run (PUT /v1/org/mcp-policy with writes: true turns them on). ${spec.operationId} was not run.` });
    }
    if (spec.destructive && args.confirm !== true) {
      // A dry run still answers what the real call would be refused for.
      const refused = tools.refusal(spec.operationId, principal);
      if (refused) return toolResult(refused);
      return toolError({
        error: 'confirmation_required',
        message: `Dry run, nothing was changed: ${spec.operationId} (${spec.tool.description}) would call ${spec.method} ${fill(spec.path, args)}. Call it again with confirm: true to do it.`,
      });
    }
    const input = { params: {} as Record<string, unknown>, query: {} as Record<string, unknown>, headers: {} as Record<string, string>, body: spec.takesBody ? args.body : undefined };
    for (const { name, in: where } of spec.parameters) {
      const value = args[name];
      if (value === undefined) continue;
      if (where === 'path') input.params[name] = value;
      else if (where === 'query') input.query[name] = value;
      else input.headers[name.toLowerCase()] = typeof value === 'string' ? value : JSON.stringify(value);
    }
    return toolResult(await tools.invoke(spec.operationId, input, { scheme, principal }, req, res));
  }

  const router = Router();
  router.get(METADATA_PATH, (_req, res) => {
    res.status(200).json(mcpResourceMetadata(base));
  });
  router.all(MCP_PATH, (req, res, next) => {
    serve(req, res).catch((err: unknown) => next(err));
  });
  return router;
}

interface ToolResult {
  content: { type: 'text'; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/**
 * An operation's answer as a tool result: a success's JSON as `structuredContent` (`{}` for a 204)
 * and as text; any other answer (4xx, and a 5xx, which stays a tool's failure rather than the
 * transport's) a tool error whose text is the error body, code and message.
 */
function toolResult(result: HttpResult): ToolResult {
  const text = result.body === undefined ? '{}' : serializeBody(result.body);
  const value: unknown = JSON.parse(text);
  const structured = value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  const ok = result.status >= 200 && result.status < 300;
  return { content: [{ type: 'text', text }], ...(structured ? { structuredContent: structured } : {}), ...(ok ? {} : { isError: true }) };
}

function toolError(body: { error: string; message: string }): ToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body, isError: true };
}

/** A path template with the arguments' values (for a dry run's description). */
function fill(path: string, args: Record<string, unknown>): string {
  return path.replace(/\{([^}]+)\}/g, (whole, name: string) => (args[name] === undefined ? whole : encodeURIComponent(String(args[name]))));
}

function idOf(body: unknown): string | number | null {
  const id = (body as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

function rpcError(res: Response, status: number, id: string | number | null, code: number, message: string): void {
  res.status(status).json({ jsonrpc: '2.0', id, error: { code, message } });
}
