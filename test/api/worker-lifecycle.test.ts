import { LOCAL_FAKES, createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, type OrgOwner } from '../support/factories';
import { startFakeRuntime, type FakeRuntime } from '../fakes/worker-runtime';
import { sha256Hex } from '../../src/lib/crypto';
import { ManualClock } from '../support/clock';

/** docs/workers-and-usage.md#worker-lifecycle-and-metered-usage: status from heartbeats against WORKER_STALE_AFTER, stop/start, token rotation. */
let t: TestApp;
let runtime: FakeRuntime;
const clock = new ManualClock(new Date('2026-11-20T12:00:00.000Z'));
beforeAll(async () => {
  t = await createTestApp({ clock, env: { ...LOCAL_FAKES, WORKER_STALE_AFTER: '2m' } });
  runtime = await startFakeRuntime();
});
afterAll(async () => {
  await runtime.close();
  await t.close();
});

async function createWorker(owner: { token: string }, body: Record<string, unknown> = { name: 'Builder' }) {
  const res = await t.http.post('/v1/workers').set(...bearer(owner.token)).send(body);
  if (res.status !== 201) throw new Error(`create worker failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { id: res.body.item.id as string, token: res.body.hostToken as string };
}
const heartbeat = (id: string, token: string | undefined, body: Record<string, unknown> = {}) => {
  const req = t.http.post(`/v1/workers/${id}/heartbeat`);
  return (token === undefined ? req : req.set('x-worker-token', token)).send(body);
};
const getWorker = async (owner: { token: string }, id: string) => (await t.http.get(`/v1/workers/${id}`).set(...bearer(owner.token))).body.item;
const post = (who: { token: string }, path: string) => t.http.post(path).set(...bearer(who.token)).send();
const workerRow = (id: string) =>
  t.db.selectFrom('workers').select(['last_heartbeat_at', 'version', 'open_sessions', 'stopped_at', 'host_token_hash']).where('id', '=', id).executeTakeFirstOrThrow();

describe('status from heartbeats', () => {
  it('goes pending → online → offline → online against WORKER_STALE_AFTER with the server’s clock', async () => {
    const owner = await createOrganization(t);
    const w = await createWorker(owner);
    expect(await getWorker(owner, w.id)).toMatchObject({ status: 'pending', lastHeartbeatAt: null, version: null });

    clock.set(new Date('2026-11-20T12:00:00.000Z'));
    const beat = await heartbeat(w.id, w.token, { version: '1.4.2', openSessions: 3 });
    expect(beat.status).toBe(200);
    expect(beat.body).toEqual({ ok: true, status: 'online' });
    expect(await getWorker(owner, w.id)).toMatchObject({ status: 'online', lastHeartbeatAt: '2026-11-20T12:00:00.000Z', version: '1.4.2' });
    expect((await workerRow(w.id)).open_sessions).toBe(3);

    clock.advance(120_000);
    expect((await getWorker(owner, w.id)).status).toBe('online');
    clock.advance(1);
    const list = await t.http.get('/v1/workers').set(...bearer(owner.token));
    expect(list.body.items.find((i: { id: string }) => i.id === w.id)).toMatchObject({ status: 'offline', lastHeartbeatAt: '2026-11-20T12:00:00.000Z' });

    // A heartbeat without a body (so without a version) keeps the last version.
    expect((await t.http.post(`/v1/workers/${w.id}/heartbeat`).set('x-worker-token', w.token)).body).toEqual({ ok: true, status: 'online' });
    expect(await getWorker(owner, w.id)).toMatchObject({ status: 'online', lastHeartbeatAt: '2026-11-20T12:02:00.001Z', version: '1.4.2' });
  });

  it('does not let a worker choose its heartbeat time', async () => {
    const owner = await createOrganization(t);
    const w = await createWorker(owner);
    const res = await heartbeat(w.id, w.token, { at: '2030-01-01T00:00:00.000Z' });
    expect(res.status).toBe(400);
    expect(res.body.details[0].path).toEqual(['body', 'at']);
    expect((await workerRow(w.id)).last_heartbeat_at).toBeNull();
  });

  it('answers 401 to a missing, wrong or other worker’s token', async () => {
    const owner = await createOrganization(t);
    const a = await createWorker(owner, { name: 'a' });
    const b = await createWorker(owner, { name: 'b' });
    expect((await heartbeat(a.id, undefined)).status).toBe(401);
    expect((await heartbeat(a.id, 'cpw_wrong')).body).toEqual({ error: 'unauthorized' });
    expect((await heartbeat(a.id, b.token)).status).toBe(401);
    expect((await workerRow(a.id)).last_heartbeat_at).toBeNull();
  });

  it('refuses bad input with the field in the path and writes nothing', async () => {
    const owner = await createOrganization(t);
    const w = await createWorker(owner);
    const cases: [Record<string, unknown>, string][] = [
      [{ openSessions: -1 }, 'openSessions'],
      [{ openSessions: 1.5 }, 'openSessions'],
      [{ version: 'v'.repeat(65) }, 'version'],
      [{ version: 'x'.repeat(100_000) }, 'version'],
      [{ version: '' }, 'version'],
    ];
    for (const [body, field] of cases) {
      const res = await heartbeat(w.id, w.token, body);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_request');
      expect(res.body.details[0].path).toEqual(['body', field]);
    }
    expect(await workerRow(w.id)).toMatchObject({ last_heartbeat_at: null, version: null, open_sessions: null });
    expect(await t.db.selectFrom('worker_online_intervals').select('worker_id').where('worker_id', '=', w.id).execute()).toEqual([]);
  });
});

describe('stop and start', () => {
  let owner: OrgOwner;
  beforeAll(async () => {
    owner = await createOrganization(t, 'Stops');
  });

  it('stops a worker: heartbeats 409 worker_stopped, runtime 409 worker_runtime_unavailable; start lets it report again', async () => {
    const w = await createWorker(owner, { name: 'r', runtimeUrl: runtime.url });
    await heartbeat(w.id, w.token, { version: '2.0.0' });
    const stopped = await post(owner, `/v1/workers/${w.id}/stop`);
    expect(stopped.status).toBe(200);
    expect(stopped.body).toEqual({ ok: true, item: expect.objectContaining({ id: w.id, status: 'stopped', version: '2.0.0' }) });
    // Stopping again changes nothing.
    expect((await post(owner, `/v1/workers/${w.id}/stop`)).body.item.status).toBe('stopped');

    const lastBefore = (await workerRow(w.id)).last_heartbeat_at;
    clock.advance(5_000);
    const refused = await heartbeat(w.id, w.token, { version: '2.0.1' });
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual({ error: 'worker_stopped', message: expect.any(String) });
    expect(await workerRow(w.id)).toMatchObject({ last_heartbeat_at: lastBefore, version: '2.0.0' });
    const runtimeRes = await t.http.get(`/v1/workers/${w.id}/runtime`).set(...bearer(owner.token));
    expect(runtimeRes.status).toBe(409);
    expect(runtimeRes.body.error).toBe('worker_runtime_unavailable');
    expect(runtime.requests).toHaveLength(0);

    const started = await post(owner, `/v1/workers/${w.id}/start`);
    expect(started.status).toBe(200);
    // Started, but not heard from since: offline until the next heartbeat.
    expect(started.body.item.status).toBe('offline');
    expect((await heartbeat(w.id, w.token)).body.status).toBe('online');
    expect((await getWorker(owner, w.id)).status).toBe('online');
    expect((await t.http.get(`/v1/workers/${w.id}/runtime`).set(...bearer(owner.token))).status).toBe(200);
  });

  it('refuses a stopped worker’s activity and LLM config (409 worker_stopped), stores nothing, and allows both again once started', async () => {
    const owner = await createOrganization(t, 'Quiet');
    const w = await createWorker(owner, { name: 'quiet' });
    const activity = { events: [{ type: 'started', at: clock.now().toISOString() }] };
    const report = () => t.http.post(`/v1/workers/${w.id}/activity`).set('x-worker-token', w.token).send(activity);
    const llmConfig = () => t.http.get(`/v1/workers/${w.id}/llm-config`).set('x-worker-token', w.token);
    expect((await report()).status).toBe(202);
    expect((await llmConfig()).status).toBe(200);
    const before = await t.db.selectFrom('workers').select('last_activity_at').where('id', '=', w.id).executeTakeFirstOrThrow();

    expect((await post(owner, `/v1/workers/${w.id}/stop`)).status).toBe(200);
    clock.advance(1_000);
    const refused = await report();
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual({ error: 'worker_stopped', message: expect.any(String) });
    const config = await llmConfig();
    expect(config.status).toBe(409);
    expect(config.body).toEqual({ error: 'worker_stopped', message: expect.any(String) });
    expect(await t.db.selectFrom('worker_activity').select('id').where('worker_id', '=', w.id).execute()).toHaveLength(1);
    expect(await t.db.selectFrom('workers').select('last_activity_at').where('id', '=', w.id).executeTakeFirstOrThrow()).toEqual(before);
    // A wrong token on a stopped worker is still 401, not a hint that the worker exists.
    expect((await t.http.post(`/v1/workers/${w.id}/activity`).set('x-worker-token', 'cpw_wrong').send(activity)).status).toBe(401);
    expect((await heartbeat(w.id, 'cpw_wrong')).status).toBe(401);

    expect((await post(owner, `/v1/workers/${w.id}/start`)).status).toBe(200);
    expect((await report()).status).toBe(202);
    expect((await llmConfig()).status).toBe(200);
  });

  it('lets the creator and an admin stop and start, and refuses other members (403)', async () => {
    const admin = await addMember(t, owner.organizationId, 'admin');
    const creator = await addMember(t, owner.organizationId, 'member');
    const other = await addMember(t, owner.organizationId, 'member');
    const w = await createWorker(creator, { name: 'mine' });
    const denied = await post(other, `/v1/workers/${w.id}/stop`);
    expect(denied.status).toBe(403);
    expect(denied.body.reason).toBe('worker_creator_or_admin_required');
    expect((await post(other, `/v1/workers/${w.id}/tokens/rotate`)).status).toBe(403);
    expect((await workerRow(w.id)).stopped_at).toBeNull();
    expect((await post(creator, `/v1/workers/${w.id}/stop`)).status).toBe(200);
    expect((await post(other, `/v1/workers/${w.id}/start`)).status).toBe(403);
    expect((await post(admin, `/v1/workers/${w.id}/start`)).body.item.status).toBe('pending');
  });

  it('counts stopped workers against the plan limit', async () => {
    const free = await createOrganization(t, 'Free');
    const a = await createWorker(free, { name: 'a' });
    await createWorker(free, { name: 'b' });
    await post(free, `/v1/workers/${a.id}/stop`);
    const third = await t.http.post('/v1/workers').set(...bearer(free.token)).send({ name: 'c' });
    expect(third.status).toBe(402);
    expect(third.body.limit).toBe('workers');
  });
});

describe('token rotation', () => {
  it('shows the new token once; the old one fails at once for heartbeats, activity and the runtime call', async () => {
    const owner = await createOrganization(t);
    const w = await createWorker(owner, { name: 'rot', runtimeUrl: runtime.url });
    const res = await post(owner, `/v1/workers/${w.id}/tokens/rotate`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, hostToken: expect.stringMatching(/^cpw_/) });
    const fresh = res.body.hostToken as string;
    expect(fresh).not.toBe(w.token);
    expect((await workerRow(w.id)).host_token_hash).toBe(sha256Hex(fresh));

    expect((await heartbeat(w.id, w.token)).status).toBe(401);
    const activity = { events: [{ type: 'started', at: clock.now().toISOString() }] };
    expect((await t.http.post(`/v1/workers/${w.id}/activity`).set('x-worker-token', w.token).send(activity)).status).toBe(401);
    expect((await heartbeat(w.id, fresh)).status).toBe(200);
    expect((await t.http.post(`/v1/workers/${w.id}/activity`).set('x-worker-token', fresh).send(activity)).status).toBe(202);

    runtime.requests.length = 0;
    expect((await t.http.get(`/v1/workers/${w.id}/runtime`).set(...bearer(owner.token))).status).toBe(200);
    expect(runtime.requests.map((r) => r.authorization)).toEqual([`Bearer ${fresh}`]);
    // Never shown again, never logged.
    expect(JSON.stringify(await getWorker(owner, w.id))).not.toContain(fresh);
    expect(t.logs.join('\n')).not.toContain(fresh);
  });
});

describe('tenant isolation', () => {
  it('answers 404 to another organization for stop, start and rotate, and changes nothing', async () => {
    const a = await createOrganization(t, 'A');
    const b = await createOrganization(t, 'B');
    const w = await createWorker(a);
    for (const path of ['stop', 'start', 'tokens/rotate']) {
      const res = await post(b, `/v1/workers/${w.id}/${path}`);
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('worker_not_found');
    }
    expect(await workerRow(w.id)).toMatchObject({ stopped_at: null, host_token_hash: sha256Hex(w.token) });
  });
});
