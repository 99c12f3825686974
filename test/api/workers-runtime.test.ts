import { LOCAL_FAKES, createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, type OrgOwner } from '../support/factories';
import { refusedUrl, startFakeRuntime, type FakeRuntime } from '../fakes/worker-runtime';

let t: TestApp;
let runtime: FakeRuntime;
const TIMEOUT_MS = 300;
beforeAll(async () => {
  t = await createTestApp({ env: LOCAL_FAKES, settings: { workerRuntimeTimeoutMs: TIMEOUT_MS } });
  runtime = await startFakeRuntime();
});
afterAll(async () => {
  await runtime.close();
  await t.close();
});

async function workerWith(runtimeUrl: string | undefined): Promise<{ owner: OrgOwner; id: string; hostToken: string }> {
  const owner = await createOrganization(t);
  const res = await t.http.post('/v1/workers').set(...bearer(owner.token)).send(runtimeUrl ? { name: 'w', runtimeUrl } : { name: 'w' });
  return { owner, id: res.body.item.id, hostToken: res.body.hostToken };
}

const runtimeOf = (w: { owner: OrgOwner; id: string }) => t.http.get(`/v1/workers/${w.id}/runtime`).set(...bearer(w.owner.token));

describe('GET /v1/workers/{id}/runtime', () => {
  it('returns the runtime’s JSON object as it is, called with the worker’s host token', async () => {
    const body = { version: '2.4.1', runtimes: [{ name: 'node', version: '20' }], status: { healthy: true }, extra: null };
    runtime.mode = { kind: 'ok', body };
    const w = await workerWith(`${runtime.url}/`);
    runtime.requests.length = 0;
    const res = await runtimeOf(w);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(body);
    expect(runtime.requests).toEqual([{ path: '/runtime/versions', authorization: `Bearer ${w.hostToken}` }]);

    // Under a base path, keeping the base URL's query string.
    const based = await workerWith(`${runtime.url}/base/?region=eu`);
    runtime.requests.length = 0;
    expect((await runtimeOf(based)).status).toBe(200);
    expect(runtime.requests).toEqual([{ path: '/base/runtime/versions?region=eu', authorization: `Bearer ${based.hostToken}` }]);
  });

  it('lets an admin call it and refuses a member who did not create the worker (403)', async () => {
    runtime.mode = { kind: 'ok', body: { version: '1' } };
    const w = await workerWith(runtime.url);
    const admin = await addMember(t, w.owner.organizationId, 'admin');
    const member = await addMember(t, w.owner.organizationId, 'member');
    expect((await t.http.get(`/v1/workers/${w.id}/runtime`).set(...bearer(admin.token))).status).toBe(200);
    const refused = await t.http.get(`/v1/workers/${w.id}/runtime`).set(...bearer(member.token));
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ error: 'forbidden', reason: 'worker_creator_or_admin_required', message: expect.any(String) });
  });

  it('answers 409 worker_runtime_unavailable when the worker has no runtime URL', async () => {
    const w = await workerWith(undefined);
    const res = await runtimeOf(w);
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: 'worker_runtime_unavailable', message: expect.any(String) });
  });

  it('answers 404 worker_not_found for unknown ids, ids of another kind, and other organizations', async () => {
    const w = await workerWith(runtime.url);
    const other = await createOrganization(t, 'Other');
    for (const [token, id] of [
      [w.owner.token, 'wrk_01jf0000000000000000000000'],
      [w.owner.token, w.owner.memberId],
      [w.owner.token, 'not-a-worker'],
      [other.token, w.id],
    ] as const) {
      const res = await t.http.get(`/v1/workers/${id}/runtime`).set(...bearer(token));
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('worker_not_found');
    }
  });

  it('answers 401 without credentials', async () => {
    const w = await workerWith(runtime.url);
    expect((await t.http.get(`/v1/workers/${w.id}/runtime`)).status).toBe(401);
  });

  describe('answers 502 worker_runtime_error when the runtime', () => {
    const cases: [string, FakeRuntime['mode']][] = [
      ['answers 500', { kind: 'status', status: 500 }],
      ['answers 404', { kind: 'status', status: 404 }],
      ['answers a redirect (not followed)', { kind: 'redirect', location: 'http://127.0.0.1:9/elsewhere' }],
      ['answers text', { kind: 'text', body: 'all good' }],
      ['answers a JSON array', { kind: 'ok', body: [1, 2, 3] }],
      ['answers JSON null', { kind: 'ok', body: null }],
      ['answers a JSON string', { kind: 'ok', body: 'v1' }],
      ['never answers', { kind: 'hang' }],
      ['stalls in the middle of its body', { kind: 'hang-body' }],
      ['streams more than 1 MiB without a length', { kind: 'huge', bytes: 3 * 1024 * 1024, declareLength: false }],
      ['declares more than 1 MiB', { kind: 'huge', bytes: 2 * 1024 * 1024, declareLength: true }],
    ];
    it.each(cases)('%s', async (_name, mode) => {
      runtime.mode = mode;
      const w = await workerWith(runtime.url);
      const started = Date.now();
      const res = await runtimeOf(w);
      expect(res.status).toBe(502);
      expect(res.body).toEqual({ error: 'worker_runtime_error', message: expect.any(String) });
      expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + 2000);
    });

    it('refuses the connection', async () => {
      const w = await workerWith(await refusedUrl());
      const res = await runtimeOf(w);
      expect(res.status).toBe(502);
      expect(res.body).toEqual({ error: 'worker_runtime_error', message: 'The worker runtime refused the connection.' });
    });

    it('times out, saying so', async () => {
      runtime.mode = { kind: 'hang' };
      const w = await workerWith(runtime.url);
      const res = await runtimeOf(w);
      expect(res.body.message).toBe(`The worker runtime did not answer within ${TIMEOUT_MS} ms.`);
    });
  });

  it('accepts a reply just under 1 MiB', async () => {
    runtime.mode = { kind: 'huge', bytes: 1024 * 1024 - 10, declareLength: false };
    const w = await workerWith(runtime.url);
    const res = await runtimeOf(w);
    expect(res.status).toBe(200);
    expect(res.body.pad).toHaveLength(1024 * 1024 - 20);
  });
});
