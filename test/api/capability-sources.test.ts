import express from 'express';
import supertest from 'supertest';
import pino from 'pino';
import type { KyselyPlugin } from 'kysely';
import { createApp } from '../../src/server/app';
import { newId } from '../../src/lib/ids';
import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, type OrgMember, type OrgOwner } from '../support/factories';

/**
 * GET /v1/capability-sources for members with and without accounts, grants and credentials, and
 * its query count: the same whatever the number of sources (one query per kind, no N+1).
 */
let t: TestApp;
let queries = 0;
let counted: ReturnType<typeof supertest>;
let owner: OrgOwner;
let member: OrgMember;
let outsider: OrgMember;

const counter: KyselyPlugin = {
  transformQuery: (args) => {
    queries++;
    return args.node;
  },
  transformResult: async (args) => args.result,
};

beforeAll(async () => {
  t = await createTestApp();
  // The same app over the same database, with every statement counted.
  const app: express.Express = createApp({ db: t.db.withPlugin(counter), clock: t.clock, logger: pino({ level: 'silent' }), fetch: globalThis.fetch, settings: t.settings, validateResponses: true, compileValidatorsAtStart: false });
  counted = supertest(app);
  owner = await createOrganization(t, 'Sources');
  await unlimited(owner.organizationId);
  member = await addMember(t, owner.organizationId, 'member');
  outsider = await addMember(t, owner.organizationId, 'member');
}, 240_000);
afterAll(() => t.close());

/** The enterprise plan: no limit on LLM providers. */
async function unlimited(organizationId: string) {
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', organizationId).execute();
}

const api = (token: string) => ({
  get: (url: string) => t.http.get(url).set(...bearer(token)),
  post: (url: string, body: object) => t.http.post(url).set(...bearer(token)).send(body),
  put: (url: string, body: object) => t.http.put(url).set(...bearer(token)).send(body),
});

async function sources(token: string) {
  const res = await api(token).get('/v1/capability-sources');
  expect(res.status).toBe(200);
  return res.body.items as { kind: string; id: string; name: string; connected: boolean; needsAction: string | null }[];
}

async function mcp(body: Record<string, unknown>): Promise<string> {
  const res = await api(owner.token).post('/v1/mcp-connections', { url: 'https://mcp.example.test/mcp', ...body });
  expect(res.status).toBe(201);
  return res.body.item.id;
}

/** A member's stored account, as the OAuth callback writes it (the flow itself is tested in suite/mcp tests). */
async function storeAccount(memberId: string, provider: 'mcp' | 'suite-365', connectionId: string | null) {
  const now = t.clock.now();
  await t.db
    .insertInto('connected_accounts')
    .values({ id: newId('connectedAccount'), organization_id: owner.organizationId, member_id: memberId, provider, connection_id: connectionId, auth_kind: 'oauth', secrets_sealed: 'v1.x.y.z', created_at: now, updated_at: now })
    .execute();
}

describe('capability sources', () => {
  it('lists nothing for a new organization', async () => {
    const fresh = await createOrganization(t, 'Empty');
    expect(await sources(fresh.token)).toEqual([]);
  });

  it("says what each member can use and what they must do first", async () => {
    // Suite client without chatSend: listed, nothing the member can do.
    await api(owner.token).put('/v1/capabilities/suite-365/oauth-client', { tenantId: 't1', clientId: 'c1', clientSecret: 's1', features: [] });
    expect(await sources(member.token)).toEqual([{ kind: 'suite-365', id: 'suite-365', name: 'Office suite', connected: false, needsAction: null }]);
    await api(owner.token).put('/v1/capabilities/suite-365/oauth-client', { tenantId: 't1', clientId: 'c1', clientSecret: 's1', features: ['chatSend'] });

    const keyed = await mcp({ name: 'Per-member key', authType: 'apikey', credentialMode: 'per_member', access: { memberIds: [member.memberId] } });
    const oauth = await mcp({
      name: 'Per-member OAuth',
      authType: 'oauth',
      credentialMode: 'per_member',
      oauthClient: { authorizationUrl: 'https://auth.example.test/authorize', tokenUrl: 'https://auth.example.test/token', clientId: 'c' },
      access: { orgWide: true },
    });
    const shared = await mcp({ name: 'Shared', authType: 'apikey', credentialMode: 'shared', apiKey: 'shared-key-123', access: { memberIds: [member.memberId] } });
    const hidden = await mcp({ name: 'Admins only', authType: 'none', credentialMode: 'shared' });

    const provider = await api(owner.token).post('/v1/llm-providers', { name: 'Claude', provider: 'anthropic', apiKey: 'sk-ant-0123456789' });
    const disabled = await api(owner.token).post('/v1/llm-providers', { name: 'Off', provider: 'openai', apiKey: 'sk-0123456789', enabled: false });
    await api(owner.token).post(`/v1/llm-providers/${provider.body.item.id}/access`, { orgMembershipId: member.memberId, role: 'viewer' });
    await api(owner.token).post(`/v1/llm-providers/${disabled.body.item.id}/access`, { orgWide: true, role: 'viewer' });

    expect(await sources(member.token)).toEqual([
      { kind: 'suite-365', id: 'suite-365', name: 'Office suite', connected: false, needsAction: 'connect' },
      { kind: 'mcp-connection', id: keyed, name: 'Per-member key', connected: false, needsAction: 'credential' },
      { kind: 'mcp-connection', id: oauth, name: 'Per-member OAuth', connected: false, needsAction: 'connect' },
      { kind: 'mcp-connection', id: shared, name: 'Shared', connected: true, needsAction: null },
      { kind: 'llm-provider', id: provider.body.item.id, name: 'Claude', connected: true, needsAction: null },
    ]);
    // Another member without grants: only what is org-wide.
    expect(await sources(outsider.token)).toEqual([
      { kind: 'suite-365', id: 'suite-365', name: 'Office suite', connected: false, needsAction: 'connect' },
      { kind: 'mcp-connection', id: oauth, name: 'Per-member OAuth', connected: false, needsAction: 'connect' },
    ]);

    // The member connects: a personal key, an OAuth account, a suite account.
    expect((await api(member.token).put(`/v1/mcp-connections/${keyed}/my-credential`, { apiKey: 'member-key-123' })).status).toBe(200);
    await storeAccount(member.memberId, 'mcp', oauth);
    await storeAccount(member.memberId, 'suite-365', null);
    const now = await sources(member.token);
    expect(now.map((s) => [s.id, s.connected, s.needsAction])).toEqual([
      ['suite-365', true, null],
      [keyed, true, null],
      [oauth, true, null],
      [shared, true, null],
      [provider.body.item.id, true, null],
    ]);
    // The outsider is unaffected by the member's accounts; admins see every connection and provider.
    expect((await sources(outsider.token)).find((s) => s.id === oauth)).toMatchObject({ connected: false, needsAction: 'connect' });
    const admin = await sources(owner.token);
    expect(admin.map((s) => s.id)).toEqual(expect.arrayContaining([hidden, keyed, oauth, shared, provider.body.item.id]));
    expect(admin.map((s) => s.id)).not.toContain(disabled.body.item.id);
  });

  it('answers with the same number of queries for 1 or 15 sources of each kind', async () => {
    const org = await createOrganization(t, 'Many');
    await unlimited(org.organizationId);
    const m = await addMember(t, org.organizationId, 'member');
    const make = async (i: number) => {
      await t.http.post('/v1/mcp-connections').set(...bearer(org.token)).send({ name: `c${i}`, url: 'https://mcp.example.test/x', authType: 'apikey', credentialMode: 'per_member', access: { orgWide: true } });
      const p = await t.http.post('/v1/llm-providers').set(...bearer(org.token)).send({ name: `p${i}`, provider: 'openai', apiKey: 'sk-0123456789' });
      await t.http.post(`/v1/llm-providers/${p.body.item.id}/access`).set(...bearer(org.token)).send({ orgMembershipId: m.memberId, role: 'viewer' });
    };
    const measure = async () => {
      queries = 0;
      const res = await counted.get('/v1/capability-sources').set(...bearer(m.token));
      expect(res.status).toBe(200);
      return { queries, items: res.body.items.length };
    };
    await make(0);
    const one = await measure();
    for (let i = 1; i < 15; i++) await make(i);
    const many = await measure();
    expect(one.items).toBe(2);
    expect(many.items).toBe(30);
    expect(many.queries).toBe(one.queries);
    // The session check plus one query per kind.
    expect(one.queries).toBeLessThanOrEqual(4);
  });

  it('needs a caller (401)', async () => {
    expect((await t.http.get('/v1/capability-sources')).status).toBe(401);
  });
});
