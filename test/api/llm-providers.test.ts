import { randomBytes } from 'node:crypto';
import type { Response } from 'supertest';
import { createTestApp, LOCAL_FAKES, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, type OrgMember, type OrgOwner } from '../support/factories';
import { findSecretsInDatabase, rowCounts } from '../support/snapshot';
import { startFakeLlm, type FakeLlm } from '../fakes/llm-providers';
import type { ManualClock } from '../support/clock';
import type { LookupFunction } from 'node:net';
import pino from 'pino';
import supertest from 'supertest';
import { createApp } from '../../src/server/app';
import { createOutbound } from '../../src/outbound';

const TIMEOUT_MS = 400;
const key = (label: string) => `sk-${label}-${randomBytes(18).toString('hex')}`;
const KEYS = { openai: key('openai'), anthropic: key('anthropic'), azure: key('azure'), google: key('google') };
const WRONG = key('wrong');

let t: TestApp;
let fake: FakeLlm;
let owner: OrgOwner;
let member: OrgMember;
/** Every reply body and header the service sent, for the "never echoes a key" checks. */
const replies: string[] = [];

beforeAll(async () => {
  fake = await startFakeLlm(KEYS);
  t = await createTestApp({ env: { ...LOCAL_FAKES, LLM_PROVIDER_TIMEOUT_MS: String(TIMEOUT_MS) } });
  owner = await createOrganization(t, 'Models Inc');
  await unlimited(owner.organizationId);
  member = await addMember(t, owner.organizationId, 'member');
}, 240_000);
afterAll(async () => {
  await t.close();
  await fake.close();
});

/** The enterprise plan (no provider limit) for organizations that hold many providers. */
async function unlimited(organizationId: string) {
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', organizationId).execute();
}

function record(res: Response): Response {
  replies.push(`${res.status} ${JSON.stringify(res.headers)} ${res.text}`);
  return res;
}

function as(token: string) {
  const auth = bearer(token);
  return {
    get: async (url: string) => record(await t.http.get(url).set(...auth)),
    post: async (url: string, body?: object) => record(await t.http.post(url).set(...auth).send(body ?? {})),
    patch: async (url: string, body: object) => record(await t.http.patch(url).set(...auth).send(body)),
    put: async (url: string, body: object) => record(await t.http.put(url).set(...auth).send(body)),
    delete: async (url: string) => record(await t.http.delete(url).set(...auth)),
  };
}

async function createProvider(body: Record<string, unknown>, token = owner.token) {
  const res = await as(token).post('/v1/llm-providers', { name: 'Main', provider: 'openai', apiKey: KEYS.openai, models: ['gpt-4o'], ...body });
  expect(res.status).toBe(201);
  return res.body.item as { id: string; keyHint: string; keyUpdatedAt: string };
}

async function createWorker(token: string): Promise<{ id: string; hostToken: string }> {
  const res = await as(token).post('/v1/workers', { name: `w-${randomBytes(3).toString('hex')}` });
  expect(res.status).toBe(201);
  return { id: res.body.item.id, hostToken: res.body.hostToken };
}

async function llmConfig(worker: { id: string; hostToken: string }) {
  return record(await t.http.get(`/v1/workers/${worker.id}/llm-config`).set('x-worker-token', worker.hostToken));
}

describe('create and read', () => {
  it('stores the key encrypted and shows only its hint; the creator gets a manager grant', async () => {
    const res = await as(owner.token).post('/v1/llm-providers', {
      name: 'OpenAI prod',
      provider: 'openai',
      apiKey: KEYS.openai,
      models: ['gpt-4o', 'gpt-4o-mini'],
      defaultModel: 'gpt-4o',
    });
    expect(res.status).toBe(201);
    expect(res.body.item).toEqual({
      id: expect.stringMatching(/^llp_[0-7][0-9a-z]{25}$/),
      name: 'OpenAI prod',
      provider: 'openai',
      baseUrl: null,
      apiVersion: null,
      models: ['gpt-4o', 'gpt-4o-mini'],
      defaultModel: 'gpt-4o',
      enabled: true,
      keyConfigured: true,
      keyHint: `…${KEYS.openai.slice(-4)}`,
      keyUpdatedAt: expect.any(String),
      createdByOrgMembershipId: owner.memberId,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const grants = await as(owner.token).get(`/v1/llm-providers/${res.body.item.id}/access`);
    expect(grants.body.items).toEqual([expect.objectContaining({ id: expect.stringMatching(/^lpg_/), orgMembershipId: owner.memberId, role: 'manager' })]);
    expect(await findSecretsInDatabase(t.db, { openai: KEYS.openai })).toEqual([]);
  });

  it('needs llmProviders.manage to create (403 permission_required for a member)', async () => {
    const res = await as(member.token).post('/v1/llm-providers', { name: 'x', provider: 'openai', apiKey: KEYS.openai });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: 'forbidden', reason: 'permission_required', message: expect.any(String) });
  });

  it('refuses bad input with a clear 400 naming the field, writing nothing', async () => {
    const before = await rowCounts(t.db);
    const cases: [Record<string, unknown>, string[]][] = [
      [{ provider: 'mistral' }, ['body', 'provider']],
      [{ models: ['a', 'b'], defaultModel: 'c' }, ['body', 'defaultModel']],
      [{ defaultModel: 'gpt-4o', models: [] }, ['body', 'defaultModel']],
      [{ models: Array.from({ length: 201 }, (_, i) => `m${i}`) }, ['body', 'models']],
      [{ models: ['a', 'a'] }, ['body', 'models']],
      [{ provider: 'openai-compatible' }, ['body', 'baseUrl']],
      [{ provider: 'azure-openai' }, ['body', 'baseUrl']],
      [{ baseUrl: 'https://10.1.2.3/v1' }, ['body', 'baseUrl']],
      [{ baseUrl: 'https://169.254.169.254/latest' }, ['body', 'baseUrl']],
      [{ baseUrl: 'https://[fd00::1]/v1' }, ['body', 'baseUrl']],
      [{ baseUrl: 'https://192.168.0.1/v1' }, ['body', 'baseUrl']],
      [{ baseUrl: 'https://100.64.0.1/v1' }, ['body', 'baseUrl']],
      [{ baseUrl: 'http://api.example.com/v1' }, ['body', 'baseUrl']],
      [{ baseUrl: 'https://user:pw@api.example.com/v1' }, ['body', 'baseUrl']],
      [{ apiKey: '' }, ['body', 'apiKey']],
      [{ keyHint: '…abcd' }, ['body', 'keyHint']],
    ];
    for (const [patch, path] of cases) {
      const res = await as(owner.token).post('/v1/llm-providers', { name: 'Bad', provider: 'openai', apiKey: KEYS.openai, models: ['gpt-4o'], ...patch });
      expect({ case: patch, status: res.status, error: res.body.error }).toEqual({ case: patch, status: 400, error: 'invalid_request' });
      expect(res.body.details.map((d: { path: string[] }) => d.path)).toContainEqual(path);
    }
    expect(await rowCounts(t.db)).toEqual(before);
  });

  it('lists to each member only what they may use; viewers read, only managers edit', async () => {
    const org = await createOrganization(t, 'Grants');
    await unlimited(org.organizationId);
    const alice = await addMember(t, org.organizationId, 'member');
    const { id } = await createProvider({ name: 'Shared' }, org.token);
    expect((await as(alice.token).get('/v1/llm-providers')).body.items).toEqual([]);
    expect((await as(alice.token).get(`/v1/llm-providers/${id}`)).status).toBe(403);
    const grant = await as(org.token).post(`/v1/llm-providers/${id}/access`, { orgMembershipId: alice.memberId, role: 'viewer' });
    expect(grant.status).toBe(201);
    expect((await as(alice.token).get('/v1/llm-providers')).body.items.map((p: { id: string }) => p.id)).toEqual([id]);
    expect((await as(alice.token).get(`/v1/llm-providers/${id}`)).status).toBe(200);
    for (const res of [
      await as(alice.token).patch(`/v1/llm-providers/${id}`, { name: 'mine' }),
      await as(alice.token).put(`/v1/llm-providers/${id}/api-key`, { apiKey: KEYS.openai }),
      await as(alice.token).post(`/v1/llm-providers/${id}/test`),
      await as(alice.token).delete(`/v1/llm-providers/${id}`),
      await as(alice.token).get(`/v1/llm-providers/${id}/access`),
    ]) {
      expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 403, reason: 'llm_provider_manager_required' });
    }
    const manager = await as(org.token).post(`/v1/llm-providers/${id}/access`, { orgMembershipId: alice.memberId, role: 'manager' });
    expect(manager.status).toBe(200);
    expect((await as(alice.token).patch(`/v1/llm-providers/${id}`, { name: 'Renamed' })).body.item.name).toBe('Renamed');
  });
});

describe('plan limit', () => {
  it('stops at the plan limit inside the creating transaction (402 plan_limit_reached), also under racing creates', async () => {
    const org = await createOrganization(t, 'Free plan');
    const before = await rowCounts(t.db);
    const racing = await Promise.all(Array.from({ length: 4 }, (_, i) => as(org.token).post('/v1/llm-providers', { name: `p${i}`, provider: 'openai', apiKey: KEYS.openai })));
    expect(racing.map((r) => r.status).sort()).toEqual([201, 402, 402, 402]);
    const refused = racing.find((r) => r.status === 402)!;
    expect(refused.body).toEqual({ error: 'plan_limit_reached', limit: 'llmProviders', message: expect.any(String) });
    const after = await rowCounts(t.db);
    expect(after.llm_providers).toBe(before.llm_providers! + 1);
    expect(after.llm_provider_grants).toBe(before.llm_provider_grants! + 1);
  });
});

describe('update and key rotation', () => {
  it('keeps the key on a PATCH without apiKey, refuses the masked hint, rotates with PUT', async () => {
    const created = await createProvider({ provider: 'openai-compatible', baseUrl: `${fake.url}/openai/v1`, apiKey: WRONG });
    const id = created.id;
    const hint = await as(owner.token).patch(`/v1/llm-providers/${id}`, { apiKey: created.keyHint, name: 'masked' });
    expect(hint.status).toBe(400);
    expect(hint.body.details[0].path).toEqual(['body', 'apiKey']);
    expect((await as(owner.token).get(`/v1/llm-providers/${id}`)).body.item.name).toBe('Main');
    const renamed = await as(owner.token).patch(`/v1/llm-providers/${id}`, { name: 'Compat', enabled: false });
    expect(renamed.body.item).toMatchObject({ name: 'Compat', enabled: false, keyHint: created.keyHint, keyUpdatedAt: created.keyUpdatedAt });
    // Still the wrong key: the provider refuses it.
    expect((await as(owner.token).post(`/v1/llm-providers/${id}/test`)).status).toBe(502);
    (t.clock as ManualClock).advance(60_000);
    const rotated = await as(owner.token).put(`/v1/llm-providers/${id}/api-key`, { apiKey: KEYS.openai });
    expect(rotated.status).toBe(200);
    expect(rotated.body.item.keyHint).toBe(`…${KEYS.openai.slice(-4)}`);
    expect(rotated.body.item.keyUpdatedAt).not.toBe(created.keyUpdatedAt);
    expect((await as(owner.token).post(`/v1/llm-providers/${id}/test`)).status).toBe(200);
    const sameHint = await as(owner.token).put(`/v1/llm-providers/${id}/api-key`, { apiKey: rotated.body.item.keyHint });
    expect(sameHint.status).toBe(400);
  });

  it('checks defaultModel against the models after the change', async () => {
    const { id } = await createProvider({ models: ['a', 'b'], defaultModel: 'a' });
    const drop = await as(owner.token).patch(`/v1/llm-providers/${id}`, { models: ['b'] });
    expect(drop.status).toBe(400);
    expect(drop.body.details[0].path).toEqual(['body', 'models']);
    const both = await as(owner.token).patch(`/v1/llm-providers/${id}`, { models: ['b'], defaultModel: 'b' });
    expect(both.body.item).toMatchObject({ models: ['b'], defaultModel: 'b' });
    const bad = await as(owner.token).patch(`/v1/llm-providers/${id}`, { defaultModel: 'z' });
    expect(bad.body.details[0].path).toEqual(['body', 'defaultModel']);
    const cleared = await as(owner.token).patch(`/v1/llm-providers/${id}`, { defaultModel: null, baseUrl: null });
    expect(cleared.body.item).toMatchObject({ defaultModel: null, baseUrl: null });
    const privateUrl = await as(owner.token).patch(`/v1/llm-providers/${id}`, { baseUrl: 'https://192.168.1.10/v1' });
    expect(privateUrl.body.details[0].path).toEqual(['body', 'baseUrl']);
  });
});

describe('test against each provider protocol', () => {
  const setups: [string, () => Record<string, unknown>, string[], (h: Record<string, unknown>, path: string) => void][] = [
    ['openai-compatible', () => ({ provider: 'openai-compatible', baseUrl: `${fake.url}/openai/v1`, apiKey: KEYS.openai }), ['gpt-4o', 'gpt-4o-mini'], (h, path) => {
      expect(h.authorization).toBe(`Bearer ${KEYS.openai}`);
      expect(path).toBe('/openai/v1/models');
    }],
    ['openai', () => ({ provider: 'openai', baseUrl: `${fake.url}/openai/v1`, apiKey: KEYS.openai }), ['gpt-4o', 'gpt-4o-mini'], (h) => expect(h.authorization).toBe(`Bearer ${KEYS.openai}`)],
    ['anthropic', () => ({ provider: 'anthropic', baseUrl: `${fake.url}/anthropic`, apiKey: KEYS.anthropic }), ['claude-sonnet-4-20250514', 'claude-3-5-haiku-20241022'], (h, path) => {
      expect(h['x-api-key']).toBe(KEYS.anthropic);
      expect(h['anthropic-version']).toBe('2023-06-01');
      expect(h.authorization).toBeUndefined();
      expect(path.startsWith('/anthropic/v1/models')).toBe(true);
    }],
    ['azure-openai', () => ({ provider: 'azure-openai', baseUrl: `${fake.url}/azure`, apiVersion: '2024-10-21', apiKey: KEYS.azure }), ['gpt-4o-2024-08-06', 'text-embedding-3-large'], (h, path) => {
      expect(h['api-key']).toBe(KEYS.azure);
      expect(path).toBe('/azure/openai/models?api-version=2024-10-21');
    }],
    ['google', () => ({ provider: 'google', baseUrl: `${fake.url}/google`, apiKey: KEYS.google }), ['gemini-2.5-pro', 'gemini-2.5-flash'], (h, path) => {
      expect(h['x-goog-api-key']).toBe(KEYS.google);
      expect(path.startsWith('/google/v1beta/models')).toBe(true);
    }],
  ];

  it.each(setups)('%s: lists the models with the stored key', async (_name, body, models, checkRequest) => {
    fake.mode = 'ok';
    const { id } = await createProvider(body());
    const before = fake.requests.length;
    const res = await as(owner.token).post(`/v1/llm-providers/${id}/test`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, reachable: true, models });
    const seen = fake.requests.slice(before);
    expect(seen).toHaveLength(1);
    checkRequest(seen[0]!.headers as Record<string, unknown>, seen[0]!.path);
  });

  it.each(setups)('%s: a refused key, 429, a hang, non-JSON and a 503 page are 502 naming the status, never the key', async (name, body) => {
    const { id } = await createProvider({ ...body(), apiKey: WRONG });
    fake.mode = 'ok';
    const refused = await as(owner.token).post(`/v1/llm-providers/${id}/test`);
    expect(refused.status).toBe(502);
    expect(refused.body).toEqual({ error: 'llm_provider_error', message: expect.stringMatching(name === 'google' ? /HTTP 400/ : /HTTP 401/) });

    await as(owner.token).put(`/v1/llm-providers/${id}/api-key`, { apiKey: (body() as { apiKey: string }).apiKey });
    fake.mode = 'rate_limited';
    const limited = await as(owner.token).post(`/v1/llm-providers/${id}/test`);
    expect(limited.status).toBe(502);
    expect(limited.body.message).toMatch(/HTTP 429/);
    if (name === 'openai' || name === 'openai-compatible') expect(limited.body.message).toMatch(/retry after 20 s/);

    fake.mode = 'hang';
    const started = Date.now();
    const hung = await as(owner.token).post(`/v1/llm-providers/${id}/test`);
    expect(hung.status).toBe(502);
    expect(hung.body.message).toContain(`${TIMEOUT_MS} ms`);
    expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + 5_000);

    fake.mode = 'html';
    const html = await as(owner.token).post(`/v1/llm-providers/${id}/test`);
    expect(html.status).toBe(502);
    expect(html.body.message).toMatch(/HTTP 200 with a body that is not JSON/);

    fake.mode = 'server_error';
    const down = await as(owner.token).post(`/v1/llm-providers/${id}/test`);
    expect(down.body.message).toMatch(/HTTP 503/);
    fake.mode = 'ok';
  });

  it('a name resolving to a private address is refused at connect time: 502, nothing sent', async () => {
    // The same service over the same database, whose DNS answers 127.0.0.1 for every name and
    // which allows no private network: the check runs on the resolved address (no rebinding).
    const lookup = ((_host: string, _o: unknown, cb: (e: Error | null, a: { address: string; family: number }[]) => void) =>
      cb(null, [{ address: '127.0.0.1', family: 4 }])) as unknown as LookupFunction;
    const strict = supertest(createApp({ db: t.db, clock: t.clock, logger: pino({ level: 'silent' }), fetch: globalThis.fetch, outbound: createOutbound({ lookup }), settings: t.settings, validateResponses: true, compileValidatorsAtStart: false }));
    const created = await strict.post('/v1/llm-providers').set(...bearer(owner.token)).send({ name: 'rebind', provider: 'openai-compatible', baseUrl: 'https://llm.rebind.test/v1', apiKey: KEYS.openai });
    expect(created.status).toBe(201);
    const before = fake.requests.length;
    const res = record(await strict.post(`/v1/llm-providers/${created.body.item.id}/test`).set(...bearer(owner.token)));
    expect(res.status).toBe(502);
    expect(res.body).toEqual({ error: 'llm_provider_error', message: expect.stringContaining('not allowed') });
    expect(fake.requests.length).toBe(before);
  }, 180_000);
});

describe('worker configuration', () => {
  it("gives a worker the enabled providers its creator may use, with keys; a revoke takes effect at once", async () => {
    const org = await createOrganization(t, 'Workers');
    await unlimited(org.organizationId);
    const dev = await addMember(t, org.organizationId, 'member');
    const shared = await createProvider({ name: 'Shared', provider: 'anthropic', apiKey: KEYS.anthropic, models: ['claude-sonnet-4-20250514'], defaultModel: 'claude-sonnet-4-20250514' }, org.token);
    const off = await createProvider({ name: 'Off', enabled: false }, org.token);
    const worker = await createWorker(dev.token);
    expect((await llmConfig(worker)).body).toEqual({ items: [] });

    const grant = await as(org.token).post(`/v1/llm-providers/${shared.id}/access`, { orgMembershipId: dev.memberId, role: 'viewer' });
    await as(org.token).post(`/v1/llm-providers/${off.id}/access`, { orgWide: true, role: 'viewer' });
    const config = await llmConfig(worker);
    expect(config.status).toBe(200);
    expect(config.body.items).toEqual([
      {
        id: shared.id,
        provider: 'anthropic',
        baseUrl: 'https://api.anthropic.com',
        apiVersion: null,
        models: ['claude-sonnet-4-20250514'],
        defaultModel: 'claude-sonnet-4-20250514',
        apiKey: KEYS.anthropic,
      },
    ]);

    await as(org.token).delete(`/v1/llm-providers/${shared.id}/access/${grant.body.item.id}`);
    expect((await llmConfig(worker)).body.items).toEqual([]);

    // Enabling the org-wide one reaches the worker; an admin-created worker sees every enabled provider.
    await as(org.token).patch(`/v1/llm-providers/${off.id}`, { enabled: true });
    expect((await llmConfig(worker)).body.items.map((p: { id: string }) => p.id)).toEqual([off.id]);
    const adminWorker = await createWorker(org.token);
    expect((await llmConfig(adminWorker)).body.items.map((p: { id: string }) => p.id)).toEqual([shared.id, off.id]);

    await as(org.token).delete(`/v1/llm-providers/${off.id}`);
    expect((await llmConfig(worker)).body.items).toEqual([]);
  });

  it('answers 401 to a missing or wrong token and to another worker’s token', async () => {
    const a = await createWorker(owner.token);
    const b = await createWorker(owner.token);
    expect((await t.http.get(`/v1/workers/${a.id}/llm-config`)).status).toBe(401);
    expect((await t.http.get(`/v1/workers/${a.id}/llm-config`).set('x-worker-token', 'cpw_nope')).status).toBe(401);
    expect((await t.http.get(`/v1/workers/${a.id}/llm-config`).set('x-worker-token', b.hostToken)).status).toBe(401);
    expect((await t.http.get(`/v1/workers/${a.id}/llm-config`).set(...bearer(owner.token))).status).toBe(401);
  });
});

describe('tenant isolation', () => {
  it('answers 404 to another organization on every id and changes nothing', async () => {
    const { id } = await createProvider({ name: 'Ours' });
    const grants = await as(owner.token).get(`/v1/llm-providers/${id}/access`);
    const grantId = grants.body.items[0].id;
    const stranger = await createOrganization(t, 'Elsewhere');
    const before = await rowCounts(t.db);
    const s = as(stranger.token);
    for (const res of [
      await s.get(`/v1/llm-providers/${id}`),
      await s.patch(`/v1/llm-providers/${id}`, { name: 'x' }),
      await s.put(`/v1/llm-providers/${id}/api-key`, { apiKey: WRONG }),
      await s.post(`/v1/llm-providers/${id}/test`),
      await s.get(`/v1/llm-providers/${id}/access`),
      await s.post(`/v1/llm-providers/${id}/access`, { orgWide: true, role: 'viewer' }),
      await s.delete(`/v1/llm-providers/${id}/access/${grantId}`),
      await s.delete(`/v1/llm-providers/${id}`),
    ]) {
      expect({ status: res.status, error: res.body.error }).toEqual({ status: 404, error: 'llm_provider_not_found' });
    }
    expect((await s.get('/v1/llm-providers')).body.items).toEqual([]);
    expect(await rowCounts(t.db)).toEqual(before);
  });
});

describe('secrets', () => {
  it('never sends, logs or stores a key in plain text', async () => {
    const all = { ...KEYS, wrong: WRONG };
    const texts = [...replies.filter((r) => !r.includes('"apiKey"')), t.logs.join('\n')];
    for (const [label, value] of Object.entries(all)) {
      expect({ label, leaks: texts.filter((text) => text.includes(value)).map((text) => text.slice(0, 200)) }).toEqual({ label, leaks: [] });
    }
    // Worker configuration is the one reply meant to carry keys.
    expect(replies.filter((r) => r.includes('"apiKey"')).length).toBeGreaterThan(0);
    expect(await findSecretsInDatabase(t.db, all)).toEqual([]);
  });

  it('audits every change without the key', async () => {
    const rows = await t.db.selectFrom('audit_logs').select(['action', 'changes']).where('organization_id', '=', owner.organizationId).where('action', 'like', 'llm_provider.%').execute();
    const actions = new Set(rows.map((r) => r.action));
    for (const action of ['llm_provider.created', 'llm_provider.updated', 'llm_provider.key_rotated', 'llm_provider.access_granted']) {
      if (action.endsWith('access_granted') && ![...actions].some((a) => a.includes('access'))) continue; // grants are audited by src/grants
      expect(actions).toContain(action);
    }
    const text = JSON.stringify(rows);
    for (const value of [...Object.values(KEYS), WRONG]) expect(text.includes(value)).toBe(false);
    const rotation = rows.find((r) => r.action === 'llm_provider.key_rotated');
    expect(Object.keys(rotation!.changes as object).sort()).toEqual(['keyHint', 'keyUpdatedAt']);
  });
});
