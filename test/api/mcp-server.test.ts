import * as oauth from 'openid-client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { asApiKey, bearer, createOrganization, type OrgOwner } from '../support/factories';
import { discover, serviceAccountClient, startOAuthApp, type OAuthTestApp, type ServiceAccountClient } from '../support/oauth';

/**
 * The control plane as an MCP server (docs/mcp-server.md), driven by the SDK's own client over
 * streamable HTTP with access tokens for `<base>/mcp` (a service account's client_credentials, asked
 * for by openid-client).
 */
let t: OAuthTestApp;
let owner: OrgOwner;
let admin: ServiceAccountClient;
let member: ServiceAccountClient;
beforeAll(async () => {
  t = await startOAuthApp();
  owner = await createOrganization(t);
  admin = await serviceAccountClient(t, owner, 'admin');
  member = await serviceAccountClient(t, owner, 'member');
  await setPolicy(owner, { enabled: true, writes: true });
});
afterAll(() => t.close());

async function setPolicy(who: OrgOwner, policy: { enabled: boolean; writes: boolean }) {
  await t.http.put('/v1/org/mcp-policy').set(...bearer(who.token)).send(policy).expect(200);
}

async function tokenFor(client: ServiceAccountClient, resource = `${t.base}/mcp`): Promise<string> {
  const tokens = await oauth.clientCredentialsGrant(await discover(t, client.id, client.clientSecret), { resource });
  return tokens.access_token;
}

async function connect(token: string): Promise<Client> {
  const client = new Client({ name: 'mcp-server-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${t.base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  await client.connect(transport);
  return client;
}

/** A raw JSON-RPC request to /mcp, as any HTTP client sends it. */
function rpc(token: string | undefined, method: string, params: Record<string, unknown> = {}) {
  const req = t.http.post('/mcp').set('accept', 'application/json, text/event-stream').set('content-type', 'application/json');
  if (token) req.set('authorization', `Bearer ${token}`);
  return req.send({ jsonrpc: '2.0', id: 7, method, params });
}

/** The error body a tool error's text carries (the operation's own: `{error, message, ...}`). */
const errorOf = (result: Record<string, unknown>) => JSON.parse((result.content as { text: string }[])[0]!.text) as { error: string; message: string; reason?: string };

describe('the protected resource', () => {
  it('answers 401 naming its RFC 9728 metadata, which names the authorization server', async () => {
    const res = await rpc(undefined, 'tools/list');
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe(`Bearer resource_metadata="${t.base}/.well-known/oauth-protected-resource/mcp"`);
    const metadata = await t.http.get('/.well-known/oauth-protected-resource/mcp');
    expect(metadata.status).toBe(200);
    expect(metadata.body).toEqual({ resource: `${t.base}/mcp`, authorization_servers: [t.base], scopes_supported: expect.arrayContaining(['teams.manage']), bearer_methods_supported: ['header'] });
  });

  it('accepts only access tokens for /mcp: a /v1 token, a session token, an API key and a forged one are 401', async () => {
    const v1 = await tokenFor(admin, `${t.base}/v1`);
    expect((await t.http.get('/v1/teams').set(...bearer(v1))).status).toBe(200);
    for (const token of [v1, owner.token, 'a.b.c']) {
      const res = await rpc(token, 'tools/list');
      expect([token, res.status]).toEqual([token, 401]);
      expect(res.headers['www-authenticate']).toBe(`Bearer error="invalid_token", resource_metadata="${t.base}/.well-known/oauth-protected-resource/mcp"`);
    }
    // An API key, in its own header or as a bearer, is no /mcp credential.
    const key = (await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'not for mcp' })).body.key as string;
    expect((await t.http.get('/v1/teams').set(...asApiKey(key))).status).toBe(200);
    expect((await rpc(undefined, 'tools/list').set(...asApiKey(key))).status).toBe(401);
    expect((await rpc(key, 'tools/list')).status).toBe(401);
    // And an /mcp token is no /v1 token.
    expect((await t.http.get('/v1/teams').set(...bearer(await tokenFor(admin)))).status).toBe(401);
  });

  it('answers GET with 405 (stateless: no stream to open) and malformed JSON-RPC as JSON-RPC errors', async () => {
    const token = await tokenFor(admin);
    const get = await t.http.get('/mcp').set(...bearer(token));
    expect(get.status).toBe(405);
    expect(get.headers.allow).toBe('POST');
    const malformed = await t.http.post('/mcp').set(...bearer(token)).set('accept', 'application/json, text/event-stream').set('content-type', 'application/json').send('{"jsonrpc":');
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32700 } });
    const unknown = await rpc(token, 'tools/unheard-of');
    expect(unknown.body).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32601 } });
  });
});

describe("the README's way in", () => {
  it('a plain token request with resource=/mcp, then the SDK client', async () => {
    const res = await fetch(`${t.base}/oauth/token`, {
      method: 'POST',
      headers: { authorization: `Basic ${btoa(`${member.id}:${member.clientSecret}`)}` },
      body: new URLSearchParams({ grant_type: 'client_credentials', resource: `${t.base}/mcp` }),
    });
    expect(res.status).toBe(200);
    const { access_token } = (await res.json()) as { access_token: string };
    const client = new Client({ name: 'my-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${t.base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${access_token}` } } }));
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('listTeams');
    await client.close();
  });
});

describe('tools', () => {
  it('lists what the caller may call now: an admin sees more than a member, and neither sees session-only operations', async () => {
    const asAdmin = await connect(await tokenFor(admin));
    const asMember = await connect(await tokenFor(member));
    expect(asAdmin.getServerCapabilities()?.tools?.listChanged).toBeUndefined();
    const adminTools = new Map((await asAdmin.listTools()).tools.map((tool) => [tool.name, tool]));
    const memberTools = new Set((await asMember.listTools()).tools.map((tool) => tool.name));
    for (const name of ['listTeams', 'listMembers', 'createTeam', 'deleteTeam']) expect([name, adminTools.has(name)]).toEqual([name, true]);
    for (const name of ['listTeams', 'listMembers']) expect([name, memberTools.has(name)]).toEqual([name, true]);
    for (const name of ['createTeam', 'deleteTeam', 'listAuditLogs']) expect([name, memberTools.has(name)]).toEqual([name, false]);
    for (const name of memberTools) expect([name, adminTools.has(name)]).toEqual([name, true]);
    for (const name of ['putMcpPolicy', 'createApiKey', 'transferOwnership']) expect([name, adminTools.has(name)]).toEqual([name, false]);
    expect(adminTools.get('createTeam')).toMatchObject({ description: 'Create a team (admin)', inputSchema: { type: 'object', required: ['body'] } });
    expect(adminTools.get('deleteTeam')).toMatchObject({ annotations: { destructiveHint: true }, inputSchema: { properties: { confirm: { type: 'boolean' } } } });
    await asAdmin.close();
    await asMember.close();
  });

  it("answers a plain tools/list from its cache as the SDK's server answers it, each caller its own list", async () => {
    const [asAdmin, asMember] = [await tokenFor(admin), await tokenFor(member)];
    for (const token of [asAdmin, asMember, asAdmin]) {
      const cached = await rpc(token, 'tools/list');
      // A cursor is the SDK's to answer (one page: the same list).
      const bySdk = await rpc(token, 'tools/list', { cursor: 'next' });
      expect([cached.status, cached.headers['content-type']]).toEqual([200, bySdk.headers['content-type']]);
      expect(cached.text).toBe(bySdk.text);
    }
    const names = async (token: string) => ((await rpc(token, 'tools/list')).body as { result: { tools: { name: string }[] } }).result.tools.map((tool) => tool.name);
    expect(await names(asMember)).not.toContain('createTeam');
    expect(await names(asAdmin)).toContain('createTeam');
  });

  it('runs a call down the API: the team is made, answered as structured content, and audited as the service account', async () => {
    const client = await connect(await tokenFor(admin));
    const result = await client.callTool({ name: 'createTeam', arguments: { body: { name: 'Made over MCP' } } });
    expect(result.isError).toBeFalsy();
    const item = (result.structuredContent as { item: { id: string; name: string } }).item;
    expect(item).toMatchObject({ name: 'Made over MCP' });
    expect(JSON.parse((result.content as { text: string }[])[0]!.text)).toEqual(result.structuredContent);
    const read = await t.http.get(`/v1/teams/${item.id}`).set(...bearer(owner.token));
    expect(read.status).toBe(200);
    const entries = await t.db
      .selectFrom('audit_logs')
      .select(['action', 'actor_type', 'actor_id', 'actor_client_id', 'target_id'])
      .where('organization_id', '=', owner.organizationId)
      .where('action', '=', 'team.created')
      .where('target_id', '=', item.id)
      .execute();
    expect(entries).toEqual([{ action: 'team.created', actor_type: 'service_account', actor_id: admin.id, actor_client_id: admin.id, target_id: item.id }]);
    const events = await t.db.selectFrom('events').select('type').where('organization_id', '=', owner.organizationId).where('type', '=', 'team.created').execute();
    expect(events.length).toBeGreaterThanOrEqual(1);
    // A read, with a query parameter, typed as JSON.
    const listed = await client.callTool({ name: 'listTeams', arguments: { limit: 50 } });
    expect(listed.isError).toBeFalsy();
    expect((listed.structuredContent as { items: { id: string }[] }).items.map((team) => team.id)).toContain(item.id);
    await client.close();
  });

  it('answers 4xx as tool errors carrying the code: 404, 403, 400 and an argument the tool does not take', async () => {
    const asAdmin = await connect(await tokenFor(admin));
    const missing = await asAdmin.callTool({ name: 'getTeam', arguments: { teamId: 'tem_01m5tngtfre7vvqsmghcgqpjqj' } });
    expect(missing.isError).toBe(true);
    expect(errorOf(missing)).toMatchObject({ error: 'team_not_found', message: expect.any(String) });
    const invalid = await asAdmin.callTool({ name: 'createTeam', arguments: { body: {} } });
    expect(invalid.isError).toBe(true);
    expect(errorOf(invalid).error).toBe('invalid_request');
    const extra = await asAdmin.callTool({ name: 'listTeams', arguments: { colour: 'red' } });
    expect(extra.isError).toBe(true);
    expect(errorOf(extra)).toMatchObject({ error: 'invalid_request' });
    const asMember = await connect(await tokenFor(member));
    const before = await t.db.selectFrom('teams').select('id').where('organization_id', '=', owner.organizationId).execute();
    const forbidden = await asMember.callTool({ name: 'createTeam', arguments: { body: { name: 'Not allowed' } } });
    expect(forbidden.isError).toBe(true);
    expect(errorOf(forbidden)).toMatchObject({ error: 'forbidden', reason: 'org_admin_required', message: expect.any(String) });
    expect(await t.db.selectFrom('teams').select('id').where('organization_id', '=', owner.organizationId).execute()).toHaveLength(before.length);
    // An unknown tool is a protocol error.
    await expect(asAdmin.callTool({ name: 'noSuchTool', arguments: {} })).rejects.toThrow(/noSuchTool/);
    await asAdmin.close();
    await asMember.close();
  });

  it('runs a destructive tool only with confirm: true; without it, a dry run that changes nothing', async () => {
    const client = await connect(await tokenFor(admin));
    const made = await client.callTool({ name: 'createTeam', arguments: { body: { name: 'To delete' } } });
    const id = (made.structuredContent as { item: { id: string } }).item.id;
    const dry = await client.callTool({ name: 'deleteTeam', arguments: { teamId: id } });
    expect(dry.isError).toBe(true);
    expect(errorOf(dry)).toMatchObject({ error: 'confirmation_required', message: expect.stringContaining(`DELETE /v1/teams/${id}`) });
    expect((await t.http.get(`/v1/teams/${id}`).set(...bearer(owner.token))).status).toBe(200);
    const done = await client.callTool({ name: 'deleteTeam', arguments: { teamId: id, confirm: true } });
    expect(done.isError).toBeFalsy();
    expect(done.structuredContent).toEqual({});
    expect((await t.http.get(`/v1/teams/${id}`).set(...bearer(owner.token))).status).toBe(404);
    // A member's dry run answers what the real call would: 403.
    const asMember = await connect(await tokenFor(member));
    const refused = await asMember.callTool({ name: 'deleteTeam', arguments: { teamId: id } });
    expect(errorOf(refused)).toMatchObject({ error: 'forbidden', reason: 'org_admin_required' });
    await client.close();
    await asMember.close();
  });
});

describe("the organization's policy", () => {
  it('writes off (the default): only reading tools are listed, and a write is a tool error', async () => {
    const other = await createOrganization(t, 'Readers');
    const sa = await serviceAccountClient(t, other, 'admin');
    const client = await connect(await tokenFor(sa));
    const names = new Set((await client.listTools()).tools.map((tool) => tool.name));
    expect(names.has('listTeams')).toBe(true);
    expect(names.has('createTeam')).toBe(false);
    const write = await client.callTool({ name: 'createTeam', arguments: { body: { name: 'No' } } });
    expect(write.isError).toBe(true);
    expect(errorOf(write).error).toBe('mcp_writes_disabled');
    expect(await t.db.selectFrom('teams').select('id').where('organization_id', '=', other.organizationId).execute()).toHaveLength(0);
    await client.close();
  });

  it('enabled false: every request answers 403 with a JSON-RPC error, never 401', async () => {
    const other = await createOrganization(t, 'Closed');
    const sa = await serviceAccountClient(t, other, 'admin');
    const token = await tokenFor(sa);
    const client = await connect(token);
    await setPolicy(other, { enabled: false, writes: true });
    const res = await rpc(token, 'tools/list');
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32001, message: expect.stringContaining('turned off') } });
    await expect(client.listTools()).rejects.toThrow(/403|turned off/);
    await expect(connect(token)).rejects.toThrow(/403|turned off/);
    await setPolicy(other, { enabled: true, writes: false });
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await client.close();
  });
});

describe('a token whose service account is gone', () => {
  it('gets 401 on the next request after the account is disabled, and after it is deleted', async () => {
    for (const end of ['disable', 'delete'] as const) {
      const sa = await serviceAccountClient(t, owner, 'admin');
      const token = await tokenFor(sa);
      const client = await connect(token);
      expect((await client.listTools()).tools.length).toBeGreaterThan(0);
      if (end === 'disable') await t.http.patch(`/v1/service-accounts/${sa.id}`).set(...bearer(owner.token)).send({ disabled: true }).expect(200);
      else await t.http.delete(`/v1/service-accounts/${sa.id}`).set(...bearer(owner.token)).expect(204);
      const res = await rpc(token, 'tools/list');
      expect([end, res.status]).toEqual([end, 401]);
      expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
      await expect(client.callTool({ name: 'listTeams', arguments: {} })).rejects.toThrow();
    }
  });
});
