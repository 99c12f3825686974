import type { Request, Response } from 'express';
import { plainListRequest, ToolListing } from './listing';
import type { ToolSpec } from './tools';

/**
 * `tools/list` from text serialized once per set of tools (docs/mcp-server.md#listing-tools): the
 * answer is the SDK's JSON-RPC answer, each set is serialized once, and a set never answers for
 * another. test/api/mcp-server.test.ts checks the answer against the SDK's own over HTTP.
 */
let serialized = 0;
function spec(name: string): ToolSpec {
  const tool = { name, description: name, inputSchema: { type: 'object' }, annotations: {} };
  // Counts how often the list is serialized (JSON.stringify calls toJSON).
  Object.defineProperty(tool, 'toJSON', { enumerable: false, value: () => (serialized++, { ...tool }) });
  return { operationId: name, method: 'GET', path: `/v1/${name}`, parameters: [], takesBody: false, reads: true, destructive: false, tool };
}

function answer(listing: ToolListing, listed: boolean[], id: string | number) {
  const out: { status?: number; headers?: Record<string, string | number>; body?: Buffer } = {};
  const res = {
    writeHead: (status: number, headers: Record<string, string | number>) => ((out.status = status), (out.headers = headers), res),
    end: (body: Buffer) => void (out.body = body),
  };
  listing.send(res as unknown as Response, listed, id);
  return { ...out, json: JSON.parse(out.body!.toString()) as { result: { tools: { name: string }[] }; jsonrpc: string; id: unknown } };
}

describe('ToolListing', () => {
  it('answers each set of tools from text serialized once, and never one set for another', () => {
    const listing = new ToolListing(['a', 'b', 'c'].map(spec));
    const first = answer(listing, [true, false, true], 1);
    expect(first.status).toBe(200);
    expect(first.headers).toEqual({ 'content-type': 'application/json', 'content-length': first.body!.length });
    expect(first.body!.toString()).toBe(JSON.stringify({ result: { tools: listing.tools([true, false, true]) }, jsonrpc: '2.0', id: 1 }));
    expect(serialized).toBe(4); // two tools: once for the cache, once for the expectation
    expect(answer(listing, [true, false, true], 'x-2').json).toEqual({ ...first.json, id: 'x-2' });
    expect(serialized).toBe(4);
    expect(answer(listing, [true, true, true], 3).json.result.tools.map((tool) => tool.name)).toEqual(['a', 'b', 'c']);
    expect(answer(listing, [false, true, false], 4).json.result.tools.map((tool) => tool.name)).toEqual(['b']);
    expect(answer(listing, [true, false, true], 5).json.result.tools.map((tool) => tool.name)).toEqual(['a', 'c']);
    expect(serialized).toBe(8);
  });
});

describe('plainListRequest', () => {
  const headers: Record<string, string> = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
  const req = (extra: Record<string, string> = {}) => {
    const all: Record<string, string> = { ...headers, ...extra };
    return { get: (name: string) => all[name.toLowerCase()] || undefined } as unknown as Request;
  };
  const list = { jsonrpc: '2.0', id: 7, method: 'tools/list' };

  it("takes the plain request the SDK's client sends, with or without empty params", () => {
    expect(plainListRequest(req(), list)).toBe(7);
    expect(plainListRequest(req({ 'mcp-protocol-version': '2025-06-18' }), { ...list, id: 'a', params: {} })).toBe('a');
  });

  it("leaves everything else to the SDK: other methods, cursors, batches, other ids and what the SDK's transport refuses", () => {
    const others: [Request, unknown][] = [
      [req(), { ...list, method: 'tools/call' }],
      [req(), { ...list, params: { cursor: 'x' } }],
      [req(), { ...list, params: { _meta: {} } }],
      [req(), [list]],
      [req(), { ...list, id: null }],
      [req(), { ...list, id: 1.5 }],
      [req(), { ...list, jsonrpc: '1.0' }],
      [req(), { ...list, extra: true }],
      [req({ accept: 'application/json' }), list],
      [req({ 'content-type': 'text/plain' }), list],
      [req({ 'content-type': 'application/merge-patch+json' }), list],
      [req({ 'mcp-protocol-version': '1999-01-01' }), list],
    ];
    for (const [request, body] of others) expect([body, plainListRequest(request, body)]).toEqual([body, undefined]);
  });
});
