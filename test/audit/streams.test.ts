import { createTestApp, LOCAL_FAKES, type TestApp } from '../support/app';
import { bearer, createOrganization, PASSWORD, type OrgOwner } from '../support/factories';
import { auditRunner } from '../support/audit-jobs';
import { startReceiver, verifyWith, type Receiver } from '../fakes/webhook-receiver';
import { startFakeHec, type FakeHec } from '../fakes/splunk-hec';
import { startFakeDatadog, type FakeDatadog } from '../fakes/datadog-logs';
import { openNote, parseCheckpoint, parseVerifierKey, type VerifierKey } from '../support/signed-note';
import type { ManualClock } from '../support/clock';
import type { JobRunner } from '../../src/jobs';
import { STREAM_LINGER_MS } from '../../src/audit-streams/delivery-job';

/**
 * Audit log streams (docs/audit.md#streams) against local sinks that check what the real ones
 * check: an HTTPS endpoint verifying Standard Webhooks signatures with the `standardwebhooks`
 * package, Splunk's HEC (`Authorization: Splunk <token>`, concatenated events) and Datadog's logs
 * intake v2 (`DD-API-KEY`). Every stream must receive every entry, in chain order, with the
 * checkpoints after their head entries; a sink that refuses and then accepts loses and reorders
 * nothing; a 401/403 pauses the stream until its config changes.
 */
let t: TestApp;
let clock: ManualClock;
let runner: JobRunner;
let key: VerifierKey;
let receiver: Receiver;
let hec: FakeHec;
let datadog: FakeDatadog;

const HEC_TOKEN = '9f1c2d3e-4b5a-6978-8a9b-0c1d2e3f4a5b';
const DD_KEY = 'dd0123456789abcdef0123456789abcd';

beforeAll(async () => {
  t = await createTestApp({ env: { ...LOCAL_FAKES, AUDIT_CHECKPOINT_EVERY: '4', AUDIT_STREAM_TIMEOUT_MS: '3000', PUBLIC_BASE_URL: 'https://cp.example.test' } });
  clock = t.clock as ManualClock;
  runner = auditRunner(t);
  key = parseVerifierKey((await t.http.get('/.well-known/audit-key')).text);
  receiver = await startReceiver();
  hec = await startFakeHec(HEC_TOKEN, ['main', 'audit']);
  datadog = await startFakeDatadog(DD_KEY);
}, 120_000);
afterAll(async () => {
  await runner.stop();
  await Promise.all([receiver.close(), hec.close(), datadog.close()]);
  await t.close();
});

const enterprise = (org: OrgOwner) => t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', org.organizationId).execute();
async function org(name: string) {
  const o = await createOrganization(t, name);
  await enterprise(o);
  return o;
}
const teams = async (o: OrgOwner, n: number) => {
  for (let i = 0; i < n; i++) expect((await t.http.post('/v1/teams').set(...bearer(o.token)).send({ name: `T${i}-${Math.random()}` })).status).toBe(201);
};
const createStream = (o: OrgOwner, body: Record<string, unknown>) => t.http.post('/v1/audit-streams').set(...bearer(o.token)).send(body);
const status = async (o: OrgOwner, id: string) => {
  const res = await t.http.get(`/v1/audit-streams/${id}/status`).set(...bearer(o.token));
  expect(res.status).toBe(200);
  return res.body as { cursor: string | null; lag: number; lastDeliveredAt: string | null; lastError: string | null; state: string };
};
/** The organization's entry ids in chain order, as the log holds them. */
const chainIds = async (o: OrgOwner) =>
  (await t.db.selectFrom('audit_logs').select(['id']).where('organization_id', '=', o.organizationId).orderBy('seq').execute()).map((r) => r.id);
/**
 * Runs the job runner until the stream has nothing left: checkpoints and retries due now, and the
 * batches after a partial one, each due once its linger has passed.
 */
const drain = async () => {
  for (let i = 0; i < 3; i++) {
    await runner.runOnce();
    clock.advance(STREAM_LINGER_MS);
  }
};

type Rec = { id: string; kind?: string; note?: string; count?: number; organizationId?: string };
/**
 * Entries in the order delivered must be the chain from position `skip + 1` on, each checkpoint
 * after its head entry and signing a position the stream has reached.
 */
function expectChainOrder(records: Rec[], chain: string[], o: OrgOwner, skip: number) {
  const entries = records.filter((r) => r.kind !== 'checkpoint');
  expect(entries.map((r) => r.id)).toEqual(chain.slice(skip));
  let seen = skip;
  for (const r of records) {
    if (r.kind !== 'checkpoint') {
      seen++;
      continue;
    }
    const body = parseCheckpoint(openNote(r.note!, key));
    expect(body.origin).toBe(`cp.example.test/audit/${o.organizationId}`);
    expect(Number(body.size)).toBe(r.count);
    expect(r.count).toBeLessThanOrEqual(seen);
    expect(r.count).toBeGreaterThan(skip);
  }
}

describe('https streams', () => {
  it('deliver every entry from the creation entry on, signed (Standard Webhooks), with signed checkpoints, in order', async () => {
    const o = await org('Https');
    await teams(o, 2);
    const created = await createStream(o, { type: 'https', config: { url: receiver.url('/siem') } });
    expect(created.status).toBe(201);
    expect(created.body.secret).toMatch(/^whsec_/);
    expect(created.body.item).toMatchObject({ type: 'https', config: { url: receiver.url('/siem') }, enabled: true });
    await teams(o, 5);
    await drain();
    const got = receiver.received.filter((r) => r.path === '/siem');
    expect(got.length).toBeGreaterThan(0);
    const records: Rec[] = [];
    for (const r of got) records.push(...(verifyWith(created.body.secret, r, clock.now()) as { records: Rec[] }).records);
    const chain = await chainIds(o);
    // From its own creation entry (the fourth: organization, two teams, the stream).
    expectChainOrder(records, chain, o, 3);
    expect(records.some((r) => r.kind === 'checkpoint')).toBe(true);
    const s = await status(o, created.body.item.id);
    expect(s).toMatchObject({ cursor: chain[chain.length - 1], lag: 0, lastError: null, state: 'active' });
  });

  it('backfill from `from` (inclusive)', async () => {
    const o = await org('Backfill');
    await teams(o, 3);
    const from = (await t.db.selectFrom('audit_logs').select(['created_at']).where('organization_id', '=', o.organizationId).orderBy('seq').executeTakeFirstOrThrow()).created_at;
    const created = await createStream(o, { type: 'https', config: { url: receiver.url('/backfill') }, from: new Date(from).toISOString() });
    expect(created.status).toBe(201);
    await drain();
    const records = receiver.received.filter((r) => r.path === '/backfill').flatMap((r) => (verifyWith(created.body.secret, r, clock.now()) as { records: Rec[] }).records);
    expectChainOrder(records, await chainIds(o), o, 0);
  });

  it('after a partial batch the stream waits STREAM_LINGER_MS before its next one, so a steady trickle is sent in batches, not entry by entry', async () => {
    const o = await org('Linger');
    const created = await createStream(o, { type: 'https', config: { url: receiver.url('/linger') } });
    expect(created.status).toBe(201);
    await drain();
    const batches = () => receiver.received.filter((r) => r.path === '/linger').length;
    const before = batches();
    await teams(o, 2);
    await runner.runOnce();
    expect(batches()).toBe(before + 1); // due: the last batch was long enough ago
    await teams(o, 2);
    await runner.runOnce();
    expect(batches()).toBe(before + 1); // lingering after that partial batch
    clock.advance(STREAM_LINGER_MS);
    await runner.runOnce();
    expect(batches()).toBe(before + 2);
    const records = receiver.received.filter((r) => r.path === '/linger').flatMap((r) => (verifyWith(created.body.secret, r, clock.now()) as { records: Rec[] }).records);
    expectChainOrder(records, await chainIds(o), o, 1); // from the stream's own creation entry
  });
});

describe('an organization locked for deletion', () => {
  it('delivers through the deletion entry, nothing during the lock, and the rest after a restore, in order', async () => {
    const o = await org('Leaving Co');
    const created = await createStream(o, { type: 'https', config: { url: receiver.url('/leaving') } });
    expect(created.status).toBe(201);
    await teams(o, 2);
    const fresh = (await t.http.post('/v1/auth/sign-in').send({ email: o.email, password: PASSWORD })).body.session.token as string;
    expect((await t.http.delete('/v1/org').set(...bearer(fresh)).send({ confirm: 'Leaving Co' })).status).toBe(202);
    const throughDeletion = await chainIds(o);
    // A platform admin's change during the lock is in the log, not in the stream.
    const admin = await createOrganization(t, 'Platform Streams');
    await t.db.updateTable('users').set({ is_platform_admin: true }).where('id', '=', admin.userId).execute();
    expect((await t.http.patch(`/v1/admin/organizations/${o.organizationId}`).set(...bearer(admin.token)).send({ plan: 'team' })).status).toBe(200);
    await drain();
    const records = () => {
      const out: Rec[] = [];
      for (const r of receiver.received.filter((x) => x.path === '/leaving')) out.push(...(verifyWith(created.body.secret, r, clock.now()) as { records: Rec[] }).records);
      return out.filter((r) => r.kind !== 'checkpoint').map((r) => r.id);
    };
    const chain = await chainIds(o);
    expect(chain.length).toBe(throughDeletion.length + 1);
    // From the stream's own creation entry (the second) to the deletion's, and not one after it.
    expect(records()).toEqual(throughDeletion.slice(1));

    expect((await t.http.post('/v1/org/restore').set(...bearer(fresh)).send()).status).toBe(200);
    await drain();
    expect(records()).toEqual((await chainIds(o)).slice(1));
  });
});

describe('Splunk HEC streams', () => {
  it("send one HEC event per record with Authorization: Splunk; a refused token pauses the stream until its config changes, and nothing is lost", async () => {
    const o = await org('Splunk');
    const created = await createStream(o, { type: 'splunk_hec', config: { url: hec.url, token: 'wrong-token', index: 'audit' } });
    expect(created.status).toBe(201);
    expect(created.body.secret).toBeUndefined();
    expect(JSON.stringify(created.body)).not.toContain('wrong-token');
    const id = created.body.item.id as string;
    await teams(o, 3);
    await drain();
    const paused = await status(o, id);
    // The organization, the stream, three teams and the pause itself, from the creation entry on.
    expect(paused).toMatchObject({ state: 'paused', cursor: null, lag: 5 });
    expect(paused.lastError).toMatch(/403/);
    // The pause is audited (and so an event): the system paused the stream.
    const log = await t.http.get('/v1/audit-logs?action=audit_stream.paused').set(...bearer(o.token));
    expect(log.body.items).toHaveLength(1);
    expect(log.body.items[0]).toMatchObject({ actor: { type: 'system' }, target: { type: 'audit_stream', id } });
    // Paused: nothing more is tried.
    const requests = hec.requests;
    clock.advance(3_600_000);
    await drain();
    expect(hec.requests).toBe(requests);

    const patched = await t.http.patch(`/v1/audit-streams/${id}`).set(...bearer(o.token)).send({ config: { url: hec.url, token: HEC_TOKEN, index: 'audit' } });
    expect(patched.status).toBe(200);
    await drain();
    const mine = hec.events.filter((e) => (e.event as Rec).organizationId === o.organizationId || (e.event as Rec).kind === 'checkpoint');
    for (const e of mine) {
      expect(e).toMatchObject({ index: 'audit', sourcetype: '_json' });
      expect(typeof e.time).toBe('number');
    }
    const chain = await chainIds(o);
    // Everything from the creation entry on, the pause and the change included.
    const records = mine.map((e) => e.event as unknown as Rec).filter((r) => r.kind !== 'checkpoint' || r.note!.includes(o.organizationId));
    expectChainOrder(records, chain, o, 1);
    expect(await status(o, id)).toMatchObject({ state: 'active', lag: 0, cursor: chain[chain.length - 1] });
  });

  it('keeps the token when a PATCH of config leaves it out, and never shows it', async () => {
    const o = await org('SplunkKeep');
    const created = await createStream(o, { type: 'splunk_hec', config: { url: hec.url, token: HEC_TOKEN } });
    const id = created.body.item.id as string;
    const patched = await t.http.patch(`/v1/audit-streams/${id}`).set(...bearer(o.token)).send({ config: { url: hec.url, index: 'main' } });
    expect(patched.status).toBe(200);
    expect(patched.body.item.config).toEqual({ url: hec.url, index: 'main' });
    await teams(o, 1);
    await drain();
    expect(await status(o, id)).toMatchObject({ state: 'active', lag: 0 });
    for (const path of [`/v1/audit-streams/${id}`, '/v1/audit-streams', '/v1/audit-logs']) {
      const res = await t.http.get(path).set(...bearer(o.token));
      expect(JSON.stringify(res.body)).not.toContain(HEC_TOKEN);
    }
    const row = await t.db.selectFrom('audit_streams').select(['secrets_sealed', 'config']).where('id', '=', id).executeTakeFirstOrThrow();
    expect(row.secrets_sealed).toMatch(/^v1\./);
    expect(JSON.stringify(row.config)).not.toContain(HEC_TOKEN);
  });
});

describe('Datadog streams', () => {
  it('send one log per record with DD-API-KEY; a sink that fails and then accepts loses nothing and reorders nothing', async () => {
    const o = await org('Datadog');
    const created = await createStream(o, { type: 'datadog', config: { site: 'datadoghq.eu', apiKey: DD_KEY, url: datadog.url } });
    expect(created.status).toBe(201);
    expect(created.body.item.config).toEqual({ site: 'datadoghq.eu', url: datadog.url });
    const id = created.body.item.id as string;
    await teams(o, 2);
    datadog.refuse.push(503, 500);
    await drain();
    const failing = await status(o, id);
    expect(failing).toMatchObject({ state: 'failing', cursor: null });
    expect(failing.lastError).toMatch(/503/);
    await teams(o, 3);
    // The retries come with backoff (about 5 s, then 30 s).
    clock.advance(7_000);
    await drain();
    expect((await status(o, id)).state).toBe('failing');
    clock.advance(40_000);
    await drain();
    const mine = datadog.logs.filter((l) => l.ddtags === `organization_id:${o.organizationId}`);
    for (const l of mine) expect(l).toMatchObject({ ddsource: 'org-control-plane', service: 'org-control-plane-audit' });
    const records = mine.map((l) => JSON.parse(l.message!) as Rec);
    expectChainOrder(records, await chainIds(o), o, 1);
    expect(await status(o, id)).toMatchObject({ state: 'active', lag: 0, lastError: null });
  });

  it('pause on 403 (an unknown key)', async () => {
    const o = await org('DatadogKey');
    const created = await createStream(o, { type: 'datadog', config: { site: 'datadoghq.com', apiKey: 'not-the-key', url: datadog.url } });
    await drain();
    expect(await status(o, created.body.item.id)).toMatchObject({ state: 'paused' });
  });
});

describe('streams never block each other', () => {
  it('a sink that times out holds only its own stream', async () => {
    const o = await org('Blocked');
    receiver.respond = (r) => (r.path === '/slow' ? { status: 200, delayMs: 60_000 } : { status: 200 });
    const slow = await createStream(o, { type: 'https', config: { url: receiver.url('/slow') } });
    const fast = await createStream(o, { type: 'datadog', config: { site: 'datadoghq.com', apiKey: DD_KEY, url: datadog.url } });
    await teams(o, 1);
    // The runner as a process runs it: outcomes are recorded while other attempts are in flight.
    const loop = auditRunner(t);
    loop.start();
    try {
      const started = Date.now();
      // The slow one is bounded by AUDIT_STREAM_TIMEOUT_MS (3 s here); the fast one is done well before.
      for (let i = 0; i < 100 && (await status(o, fast.body.item.id)).lag > 0; i++) await new Promise((r) => setTimeout(r, 50));
      expect((await status(o, fast.body.item.id)).lag).toBe(0);
      expect(Date.now() - started).toBeLessThan(2_500);
      for (let i = 0; i < 100 && (await status(o, slow.body.item.id)).state !== 'failing'; i++) await new Promise((r) => setTimeout(r, 100));
    } finally {
      await loop.stop();
      receiver.respond = () => ({ status: 200 });
    }
    const slowStatus = await status(o, slow.body.item.id);
    expect(slowStatus.state).toBe('failing');
    expect(slowStatus.lastError).toMatch(/no answer within 3000 ms/);
  }, 60_000);
});

describe('routes', () => {
  it('refuse bad input with 400 naming the field', async () => {
    const o = await org('BadInput');
    const cases: [Record<string, unknown>, string[]][] = [
      [{ type: 'ftp', config: {} }, ['body', 'type']],
      [{ type: 'https', config: { url: 'https://siem.example.com/in', token: 'not-an-https-setting' } }, ['body', 'config', 'token']],
      [{ type: 'splunk_hec', config: { url: 'https://splunk.example.com/services/collector/event' } }, ['body', 'config', 'token']],
      [{ type: 'datadog', config: { apiKey: 'k' } }, ['body', 'config', 'site']],
      [{ type: 'https', config: { url: 'https://10.0.0.1/in' } }, ['body', 'config', 'url']],
      [{ type: 'https', config: { url: 'ftp://siem.example.com/' } }, ['body', 'config', 'url']],
      [{ type: 'splunk_hec', config: { url: 'https://splunk.example.com/services/collector/event', token: 't', index: '_internal' } }, ['body', 'config', 'index']],
      [{ type: 'datadog', config: { site: 'datadoghq.org', apiKey: 'k' } }, ['body', 'config', 'site']],
      [{ type: 'https', config: { url: 'https://siem.example.com/' }, from: new Date(clock.now().getTime() + 86_400_000).toISOString() }, ['body', 'from']],
    ];
    for (const [body, path] of cases) {
      const res = await createStream(o, body);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_request');
      expect(res.body.details.map((d: { path: string[] }) => d.path)).toContainEqual(path);
    }
    const created = await createStream(o, { type: 'https', config: { url: 'https://siem.example.com/in' } });
    const wrongType = await t.http.patch(`/v1/audit-streams/${created.body.item.id}`).set(...bearer(o.token)).send({ config: { url: 'https://siem.example.com/in', apiKey: 'x' } });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.details[0].path).toEqual(['body', 'config', 'apiKey']);
    const missing = await t.http.patch(`/v1/audit-streams/${created.body.item.id}`).set(...bearer(o.token)).send({ config: {} });
    expect(missing.status).toBe(400);
    expect(missing.body.details[0].path).toEqual(['body', 'config', 'url']);
  });

  it("answer 404 for another organization's stream, and list, get and delete one's own", async () => {
    const a = await org('OwnerA');
    const b = await org('OwnerB');
    const created = await createStream(a, { type: 'https', config: { url: 'https://siem.example.com/a' } });
    const id = created.body.item.id as string;
    for (const req of [t.http.get(`/v1/audit-streams/${id}`), t.http.get(`/v1/audit-streams/${id}/status`), t.http.patch(`/v1/audit-streams/${id}`).send({ enabled: false }), t.http.delete(`/v1/audit-streams/${id}`)]) {
      const res = await req.set(...bearer(b.token));
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('audit_stream_not_found');
    }
    expect((await t.http.get('/v1/audit-streams').set(...bearer(b.token))).body.items).toEqual([]);
    expect((await t.http.get('/v1/audit-streams').set(...bearer(a.token))).body.items.map((s: { id: string }) => s.id)).toEqual([id]);
    expect((await t.http.get(`/v1/audit-streams/${id}`).set(...bearer(a.token))).body.item.id).toBe(id);
    expect((await t.http.delete(`/v1/audit-streams/${id}`).set(...bearer(a.token))).status).toBe(204);
    expect((await t.http.get(`/v1/audit-streams/${id}`).set(...bearer(a.token))).status).toBe(404);
  });

  it('a disabled stream holds its cursor and continues from it when enabled', async () => {
    const o = await org('Disabled');
    const created = await createStream(o, { type: 'https', config: { url: receiver.url('/disabled') } });
    const id = created.body.item.id as string;
    expect((await t.http.patch(`/v1/audit-streams/${id}`).set(...bearer(o.token)).send({ enabled: false })).status).toBe(200);
    await teams(o, 2);
    await drain();
    expect(receiver.received.filter((r) => r.path === '/disabled')).toHaveLength(0);
    expect((await status(o, id)).lag).toBe(4);
    expect((await t.http.patch(`/v1/audit-streams/${id}`).set(...bearer(o.token)).send({ enabled: true })).status).toBe(200);
    await drain();
    const records = receiver.received.filter((r) => r.path === '/disabled').flatMap((r) => (verifyWith(created.body.secret, r, clock.now()) as { records: Rec[] }).records);
    expectChainOrder(records, await chainIds(o), o, 1);
  });
});
