import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { createOutbound } from '../../src/outbound';
import { startOAuthApp, type OAuthTestApp } from '../support/oauth';
import { authorizeAsPerson, pageText } from '../support/oauth-person';
import { addMember, bearer, createOrganization, type OrgOwner } from '../support/factories';
import { startClientMetadataServer, type ClientMetadataServer } from '../fakes/client-metadata-server';

/**
 * An unmodified MCP client against `<base>/mcp` (docs/mcp-server.md, docs/oauth.md#outside-clients):
 * the SDK's own Client and StreamableHTTPClientTransport with its OAuthClientProvider do the whole
 * dance — the 401 and its RFC 9728 metadata, authorization-server discovery, registration (dynamic
 * registration here, OAUTH_DCR=open; or a Client ID Metadata Document the client serves itself),
 * PKCE, a person signing in and approving on the hosted pages (over HTTP), the code exchange with
 * `resource` = `<base>/mcp` — then tools/list and tools/call as that member.
 */
const REDIRECT = 'http://127.0.0.1:9/mcp-callback';
let cimd: ClientMetadataServer;
let t: OAuthTestApp;
let owner: OrgOwner;

beforeAll(async () => {
  cimd = await startClientMetadataServer();
  t = await startOAuthApp({ env: { OAUTH_DCR: 'open' }, outbound: createOutbound({ allowedNetworks: ['127.0.0.0/8'], lookup: cimd.lookup, ca: cimd.ca }) });
  owner = await createOrganization(t, 'Agents Inc');
});
afterAll(async () => {
  await t?.close();
  await cimd?.close();
});

/** The application's side of OAuth as the SDK asks for it: what it registered, its tokens, its verifier; the browser is the test's person. */
class TestClientProvider implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | undefined;
  constructor(readonly clientMetadataUrl?: string) {}
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'Desk assistant', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

const mcpUrl = () => new URL(`${t.base}/mcp`);

/** Connect, be sent to authorize, let the person approve, finish, connect again: the SDK's documented sequence. */
async function authorizeAndConnect(provider: TestClientProvider, email: string): Promise<{ client: Client; consent: string }> {
  const first = new Client({ name: 'desk-assistant', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider });
  await expect(first.connect(transport)).rejects.toBeInstanceOf(UnauthorizedError);
  expect(provider.authorizationUrl).toBeDefined();
  const answer = await authorizeAsPerson(t.base, provider.authorizationUrl!.href, { email });
  expect(answer.url.searchParams.get('iss')).toBe(t.base);
  await transport.finishAuth(answer.url.searchParams.get('code')!);
  const client = new Client({ name: 'desk-assistant', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider }));
  return { client, consent: pageText(answer.consent ?? '') };
}

describe('an MCP client authorizes through the service and uses its tools', () => {
  it('with dynamic registration: registers, the member approves, tools/list and tools/call run as the member', async () => {
    const provider = new TestClientProvider();
    const { client, consent } = await authorizeAndConnect(provider, owner.email);
    expect(provider.info?.client_id).toMatch(/^oac_/);
    expect(consent).toContain('Desk assistant wants to act for you');
    expect(consent).toContain('registered itself');
    const claims = JSON.parse(Buffer.from(provider.saved!.access_token.split('.')[1]!, 'base64url').toString()) as { aud: string; client_id: string };
    expect(claims).toMatchObject({ aud: `${t.base}/mcp`, client_id: provider.info!.client_id });

    const tools = await client.listTools();
    expect(tools.tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['listTeams', 'listMembers', 'listAuditLogs', 'listWebhooks']));
    const members = await client.callTool({ name: 'listMembers', arguments: {} });
    expect(members.isError).toBeFalsy();
    expect(JSON.stringify(members.structuredContent)).toContain(owner.memberId);
    await client.close();

    const mine = await t.http.get('/v1/me/authorizations').set(...bearer(owner.token));
    expect(mine.body.items).toEqual(expect.arrayContaining([expect.objectContaining({ client: { id: provider.info!.client_id, name: 'Desk assistant', type: 'dynamic' }, resource: `${t.base}/mcp` })]));
  });

  it("a plain member's client gets the member's tools only, and nothing once the member is removed", async () => {
    const member = await addMember(t, owner.organizationId, 'member');
    const provider = new TestClientProvider();
    const { client } = await authorizeAndConnect(provider, member.email);
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    // A member reads teams; the audit log and the webhooks are the admins' (the owner's client lists them).
    expect(names).toContain('listTeams');
    expect(names).not.toContain('listAuditLogs');
    expect(names).not.toContain('listWebhooks');
    const refused = await client.callTool({ name: 'listAuditLogs', arguments: {} });
    expect(refused.isError).toBe(true);
    await client.close();

    await t.http.delete(`/v1/members/${member.memberId}`).set(...bearer(owner.token)).expect(204);
    // The same token, on its next request: refused as a credential (the authorization went with the membership).
    const res = await t.http.post('/mcp').set(...bearer(provider.saved!.access_token)).set('accept', 'application/json, text/event-stream').send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(res.status).toBe(401);
  });

  it('with a Client ID Metadata Document: no registration, the URL is the client_id, the document is its claim', async () => {
    const clientId = `${cimd.origin}/mcp/client.json`;
    cimd.serve('/mcp/client.json', { client_id: clientId, client_name: 'Desk assistant (CIMD)', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' }, { 'cache-control': 'max-age=300' });
    const before = await t.db.selectFrom('oauth_registered_clients').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
    const provider = new TestClientProvider(clientId);
    const { client, consent } = await authorizeAndConnect(provider, owner.email);
    expect(provider.info?.client_id).toBe(clientId);
    expect(consent).toContain('Desk assistant (CIMD) wants to act for you');
    expect(consent).toContain(`This application describes itself at ${clientId}`);
    const tools = await client.callTool({ name: 'listTeams', arguments: { limit: 10 } });
    expect(tools.isError).toBeFalsy();
    await client.close();
    const after = await t.db.selectFrom('oauth_registered_clients').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
    expect(Number(after.n)).toBe(Number(before.n));
    expect(cimd.hits('/mcp/client.json')).toBe(1);
  });
});
