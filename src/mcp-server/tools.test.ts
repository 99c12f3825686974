import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import bundled from '../../generated/openapi.json';
import { deriveTools, tokenScheme, type ContractDocument } from './tools';

/**
 * The tools are the contract's (docs/mcp-server.md#tools-from-the-contract): checked over the whole
 * contract, and on a copy with an operation the MCP code has never heard of.
 */
const contract = bundled as unknown as ContractDocument;
const tools = deriveTools(contract);
const byName = new Map(tools.map((tool) => [tool.operationId, tool]));

interface Op {
  operationId: string;
  security?: Record<string, unknown>[];
  requestBody?: { content?: Record<string, { example?: unknown }> };
  responses: Record<string, unknown>;
  'x-destructive'?: boolean;
}

function operations(doc: ContractDocument): { path: string; method: string; op: Op }[] {
  const out: { path: string; method: string; op: Op }[] = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of ['get', 'put', 'post', 'delete', 'patch']) {
      const op = item?.[method] as Op | undefined;
      if (op?.operationId) out.push({ path, method, op });
    }
  }
  return out;
}

const schemesOf = (op: Op) => new Set((op.security ?? contract.security ?? []).flatMap((requirement) => Object.keys(requirement)));

describe('tools derived from the whole contract', () => {
  it('makes a tool of every /v1 operation a token may call and nothing else', () => {
    expect(tokenScheme(contract)).toMatch(/^(oauthAccessToken|bearerAuth)$/);
    const all = operations(contract);
    expect(tools.length).toBeGreaterThan(100);
    for (const { path, method, op } of all) {
      const tool = byName.get(op.operationId);
      const schemes = schemesOf(op);
      const publicOp = (op.security ?? contract.security ?? []).some((requirement) => Object.keys(requirement).length === 0) || schemes.size === 0;
      if (!path.startsWith('/v1/') || publicOp || path === '/v1/me' || path.startsWith('/v1/me/')) {
        expect([op.operationId, tool]).toEqual([op.operationId, undefined]);
        continue;
      }
      if (schemes.size === 1 && schemes.has('bearerAuth')) expect([op.operationId, tool]).toEqual([op.operationId, undefined]); // session only
      if (schemes.has('workerToken') || schemes.has('scimBearer')) expect([op.operationId, tool]).toEqual([op.operationId, undefined]);
      const nonJson = JSON.stringify(op.responses).match(/"(text\/csv|application\/x-ndjson)"/);
      if (nonJson) expect([op.operationId, tool]).toEqual([op.operationId, undefined]);
      if (tool) expect([tool.method, tool.path]).toEqual([method.toUpperCase(), path]);
    }
    // Known members of each side, as the contract stands.
    for (const name of ['listMembers', 'createTeam', 'deleteTeam', 'changeMemberRole', 'rotateWebhookSecret']) expect(byName.has(name)).toBe(true);
    for (const name of ['createApiKey', 'exportAuditLogs', 'transferOwnership', 'getMcpPolicy', 'putMcpPolicy', 'workerHeartbeat', 'scimListUsers', 'signIn']) expect(byName.has(name)).toBe(false);
  });

  it('names each tool by its operationId, describes it by its summary, and gives one self-contained, valid JSON Schema', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    const names = new Set<string>();
    for (const { operationId, tool, parameters, takesBody } of tools) {
      expect(tool.name).toBe(operationId);
      expect(names.has(tool.name)).toBe(false);
      names.add(tool.name);
      const op = operations(contract).find((o) => o.op.operationId === operationId)!.op as Op & { summary?: string };
      expect(tool.description).toBe(op.summary);
      const text = JSON.stringify(tool.inputSchema);
      expect(text).not.toContain('$ref');
      expect(text).not.toMatch(/"x-[a-z-]+":/);
      expect(() => ajv.compile(tool.inputSchema)).not.toThrow();
      expect(tool.inputSchema).toMatchObject({ type: 'object', additionalProperties: false });
      const properties = Object.keys(tool.inputSchema.properties as object);
      expect(properties).toEqual(expect.arrayContaining(parameters.map((p) => p.name)));
      expect(properties.includes('body')).toBe(takesBody);
      for (const p of parameters.filter((p) => p.in === 'path')) expect(tool.inputSchema.required).toContain(p.name);
    }
  });

  it('accepts each operation example body as its tool `body`, and refuses arguments the operation does not take', () => {
    const ajv = new Ajv2020({ strict: false });
    addFormats(ajv);
    ajv.addFormat('typeid', true);
    let checked = 0;
    for (const { op } of operations(contract)) {
      const tool = byName.get(op.operationId);
      const example = op.requestBody?.content?.['application/json']?.example;
      if (!tool || example === undefined) continue;
      const validate = ajv.compile({ ...tool.tool.inputSchema, required: [] });
      expect([op.operationId, validate({ body: example }), validate.errors]).toEqual([op.operationId, true, null]);
      const extra = validate({ body: example, unexpected: 1 });
      expect([op.operationId, extra]).toEqual([op.operationId, false]);
      checked++;
    }
    expect(checked).toBeGreaterThanOrEqual(10);
  });

  it('marks every DELETE and every x-destructive operation destructive, with an optional `confirm`', () => {
    for (const { op, method } of operations(contract)) {
      const tool = byName.get(op.operationId);
      if (!tool) continue;
      const destructive = method === 'delete' || op['x-destructive'] === true;
      expect([op.operationId, tool.destructive]).toEqual([op.operationId, destructive]);
      const properties = tool.tool.inputSchema.properties as Record<string, unknown>;
      expect([op.operationId, 'confirm' in properties]).toEqual([op.operationId, destructive]);
      expect((tool.tool.inputSchema.required as string[] | undefined) ?? []).not.toContain('confirm');
      expect(tool.tool.annotations).toMatchObject({ readOnlyHint: method === 'get', destructiveHint: destructive });
    }
    for (const name of ['changeMemberRole', 'updateServiceAccount', 'rotateWorkerToken', 'stopWorker', 'cancelInvitation']) expect(byName.get(name)?.destructive).toBe(true);
  });
});

describe('an operation added to the contract', () => {
  it('becomes a tool with its parameters, body and flags, with no MCP code', () => {
    const doc = structuredClone(contract) as ContractDocument & { paths: Record<string, Record<string, unknown>> };
    doc.paths['/v1/widgets/{widgetId}'] = {
      parameters: [{ name: 'widgetId', in: 'path', required: true, schema: { type: 'string', pattern: '^wdg_' } }],
      get: {
        operationId: 'getWidget',
        summary: 'Read a widget',
        'x-access': 'member',
        parameters: [{ $ref: '#/components/parameters/Limit' }],
        responses: { '200': { description: 'ok', content: { 'application/json': { schema: { type: 'object' } } } } },
      },
      post: {
        operationId: 'freezeWidget',
        summary: 'Freeze a widget',
        'x-permission': 'org.update',
        'x-destructive': true,
        parameters: [{ name: 'If-Match', in: 'header', required: true, schema: { type: 'string' } }],
        requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', properties: { reason: { type: 'string', example: 'x' } } } } } },
        responses: { '204': { description: 'done' } },
      },
      delete: {
        operationId: 'exportWidget',
        summary: 'A download',
        'x-access': 'member',
        responses: { '200': { description: 'csv', content: { 'text/csv': { schema: { type: 'string' } } } } },
      },
    };
    const derived = new Map(deriveTools(doc).map((tool) => [tool.operationId, tool]));
    expect(derived.size).toBe(tools.length + 2);
    expect(derived.get('exportWidget')).toBeUndefined();
    expect(derived.get('getWidget')).toMatchObject({
      method: 'GET',
      path: '/v1/widgets/{widgetId}',
      reads: true,
      destructive: false,
      parameters: [
        { name: 'widgetId', in: 'path' },
        { name: 'limit', in: 'query' },
      ],
      tool: {
        name: 'getWidget',
        description: 'Read a widget',
        inputSchema: { type: 'object', required: ['widgetId'], properties: { widgetId: { type: 'string', pattern: '^wdg_' }, limit: { type: 'integer' } } },
      },
    });
    expect(derived.get('freezeWidget')).toMatchObject({
      method: 'POST',
      reads: false,
      destructive: true,
      takesBody: true,
      tool: { inputSchema: { required: ['widgetId', 'If-Match', 'body'], properties: { body: { type: 'object', properties: { reason: { type: 'string' } } }, confirm: { type: 'boolean' } } } },
    });
    // OpenAPI's `example` is not JSON Schema: left out.
    expect(JSON.stringify(derived.get('freezeWidget')!.tool.inputSchema)).not.toContain('example');
  });

  it('stops the start when a parameter clashes with `body` or `confirm`', () => {
    const doc = structuredClone(contract) as ContractDocument & { paths: Record<string, Record<string, unknown>> };
    doc.paths['/v1/clash'] = {
      get: {
        operationId: 'clash',
        summary: 'Clash',
        'x-access': 'member',
        parameters: [{ name: 'body', in: 'query', schema: { type: 'string' } }],
        responses: { '200': { description: 'ok', content: { 'application/json': { schema: { type: 'object' } } } } },
      },
    };
    expect(() => deriveTools(doc)).toThrow(/clash: parameter body clashes/);
  });
});
