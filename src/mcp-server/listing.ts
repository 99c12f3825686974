import type { Request, Response } from 'express';
import type * as SdkMediaType from '@modelcontextprotocol/sdk/shared/mediaType.js';
import type * as SdkTypes from '@modelcontextprotocol/sdk/types.js';
import { lazy } from '../lib/lazy';
import type { ToolSpec } from './tools';

/* eslint-disable @typescript-eslint/no-require-imports */
const sdk = lazy(() => ({
  isJsonContentType: (require('@modelcontextprotocol/sdk/shared/mediaType.js') as typeof SdkMediaType).isJsonContentType,
  versions: (require('@modelcontextprotocol/sdk/types.js') as typeof SdkTypes).SUPPORTED_PROTOCOL_VERSIONS,
}));
/* eslint-enable @typescript-eslint/no-require-imports */

/** Distinct tool sets kept serialized (each at most the whole list, ~90 KB): the roles and scope sets in use. */
const MAX_SETS = 32;

/**
 * `tools/list` answered from text serialized once per set of tools (docs/mcp-server.md#listing-tools).
 *
 * The SDK's stateless pattern builds a server and a transport per request and serializes the
 * whole list (~90 KB for an admin) each time, several times the CPU of a `/v1` read. A plain
 * `tools/list` (what the SDK's client sends, and what its transport would answer 200 with the
 * list) is answered here instead: the same JSON-RPC answer, byte for byte, from a cache keyed by
 * exactly which tools it lists. The key is the list itself (each tool's refusal asked for this
 * caller, per request), never the caller's role or scopes, so a caller can only be answered a
 * list made of the tools it may call. The contract and settings do not change while the process
 * runs, so nothing is invalidated; the least recently made set is dropped beyond MAX_SETS.
 * Anything else (a cursor, a batch, a header the transport would refuse) goes to the SDK.
 */
export class ToolListing {
  private readonly sets = new Map<string, Buffer>();

  constructor(private readonly catalogue: readonly ToolSpec[]) {}

  /** The MCP Tool objects of the tools `listed` marks (one flag per catalogue entry). */
  tools(listed: readonly boolean[]): ToolSpec['tool'][] {
    return this.catalogue.filter((_, i) => listed[i]).map((spec) => spec.tool);
  }

  /** Writes the answer to `tools/list` request `id` for the tools `listed` marks. */
  send(res: Response, listed: readonly boolean[], id: string | number): void {
    const key = listed.map((on) => (on ? '1' : '0')).join('');
    let head = this.sets.get(key);
    if (!head) {
      // The SDK's own answer: `{result, jsonrpc, id}`, serialized by JSON.stringify.
      head = Buffer.from(`{"result":{"tools":${JSON.stringify(this.tools(listed))}},"jsonrpc":"2.0","id":`);
      if (this.sets.size >= MAX_SETS) this.sets.delete(this.sets.keys().next().value!);
      this.sets.set(key, head);
    }
    const body = Buffer.concat([head, Buffer.from(`${JSON.stringify(id)}}`)]);
    // writeHead, not Express's set: that would add a charset the SDK's answer does not have.
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length }).end(body);
  }
}

/**
 * The id of a `tools/list` request the SDK's transport would answer with the whole list as JSON
 * (its Accept, Content-Type and protocol-version checks pass; one request, no cursor), or
 * undefined: anything else is the SDK's to answer.
 */
export function plainListRequest(req: Request, body: unknown): string | number | undefined {
  const accept = req.get('accept');
  if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) return undefined;
  if (!sdk().isJsonContentType(req.get('content-type') ?? null)) return undefined;
  const version = req.get('mcp-protocol-version');
  if (version !== undefined && !sdk().versions.includes(version)) return undefined;
  if (!isObject(body)) return undefined;
  const { jsonrpc, method, id, params, ...rest } = body;
  if (jsonrpc !== '2.0' || method !== 'tools/list' || Object.keys(rest).length > 0) return undefined;
  if (typeof id !== 'string' && !Number.isSafeInteger(id)) return undefined;
  if (params !== undefined && !(isObject(params) && Object.keys(params).length === 0)) return undefined;
  return id as string | number;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
