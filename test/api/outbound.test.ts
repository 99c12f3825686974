import type { LookupFunction } from 'node:net';
import { LOCAL_FAKES, createTestApp, type TestApp } from '../support/app';
import { bearer, createOrganization, type OrgOwner } from '../support/factories';
import { startFakeRuntime, type FakeRuntime } from '../fakes/worker-runtime';
import { createOutbound, type Outbound } from '../../src/outbound';

/**
 * The egress policy through the API (docs/egress.md#egress-policy): tenant URLs with a literal disallowed
 * address are refused when written; a stored URL whose address is not allowed when called (the
 * setting changed, or a name resolving to loopback) is refused with nothing sent to it.
 *
 * One app whose outbound client the test swaps (compiling an app's router is slow): `use(...)`
 * plays a process with that OUTBOUND_ALLOWED_NETWORKS (and DNS).
 */
let t: TestApp;
let runtime: FakeRuntime;
let owner: OrgOwner;
let current: Outbound = createOutbound();
const swappable: Outbound = {
  get policy() {
    return current.policy;
  },
  request: (url, init) => current.request(url, init),
};
const use = (outbound: Outbound) => {
  current = outbound;
  return t;
};
const strictApp = () => use(createOutbound());
const localApp = () => use(createOutbound({ allowedNetworks: LOCAL_FAKES.OUTBOUND_ALLOWED_NETWORKS!.split(',') }));

beforeAll(async () => {
  t = await createTestApp({ outbound: swappable });
  runtime = await startFakeRuntime({ kind: 'ok', body: { version: '1.0.0' } });
  owner = await createOrganization(t);
}, 120_000);
afterAll(async () => {
  await runtime.close();
  await t.close();
});
beforeEach(() => {
  runtime.requests.length = 0;
});

const port = () => new URL(runtime.url).port;

/** A worker in an organization of its own (plans limit workers per organization). */
async function workerIn(app: TestApp, runtimeUrl: string): Promise<{ id: string; token: string }> {
  const org = await createOrganization(t);
  const res = await app.http.post('/v1/workers').set(...bearer(org.token)).send({ name: 'w', runtimeUrl });
  expect(res.status).toBe(201);
  return { id: res.body.item.id, token: org.token };
}

describe('tenant URLs are checked when written', () => {
  test.each(['http://127.0.0.1:8080/', 'http://169.254.169.254/latest/', 'http://10.0.0.1/', 'http://[::1]/', 'http://[::ffff:127.0.0.1]/', 'http://[fd00::1]/', 'http://localhost/', 'https://u:p@runtime.example.com/'])(
    'worker runtimeUrl %s: 400 naming runtimeUrl, nothing stored',
    async (runtimeUrl) => {
      const before = await strictApp().http.get('/v1/workers').set(...bearer(owner.token));
      const res = await strictApp().http.post('/v1/workers').set(...bearer(owner.token)).send({ name: 'w', runtimeUrl });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'invalid_request', message: expect.any(String), details: [{ path: ['body', 'runtimeUrl'], message: expect.any(String) }] });
      const after = await strictApp().http.get('/v1/workers').set(...bearer(owner.token));
      expect(after.body.items).toHaveLength(before.body.items.length);
    },
  );

  test('updating a worker to a metadata address is refused; the stored URL stays', async () => {
    const w = await workerIn(strictApp(), 'https://runtime.example.com/');
    const res = await strictApp().http.patch(`/v1/workers/${w.id}`).set(...bearer(w.token)).send({ runtimeUrl: 'http://169.254.169.254/' });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ path: ['body', 'runtimeUrl'], message: expect.stringMatching(/not allowed/) }]);
    const got = await strictApp().http.get(`/v1/workers/${w.id}`).set(...bearer(w.token));
    expect(got.body.item.runtimeUrl).toBe('https://runtime.example.com/');
  });

  test.each([
    [{ url: 'http://127.0.0.1:9/mcp' }, ['body', 'url']],
    [{ oauthClient: { authorizationUrl: 'http://[::1]/authorize', tokenUrl: 'https://auth.example.com/token', clientId: 'c' } }, ['body', 'oauthClient', 'authorizationUrl']],
    [{ oauthClient: { authorizationUrl: 'https://auth.example.com/authorize', tokenUrl: 'http://169.254.169.254/token', clientId: 'c' } }, ['body', 'oauthClient', 'tokenUrl']],
  ])('MCP connection %j: 400 naming %j', async (override, path) => {
    const body = { name: 'm', url: 'https://mcp.example.com/mcp', authType: 'oauth', credentialMode: 'per_member', oauthClient: { authorizationUrl: 'https://auth.example.com/a', tokenUrl: 'https://auth.example.com/t', clientId: 'c' }, ...override };
    const res = await strictApp().http.post('/v1/mcp-connections').set(...bearer(owner.token)).send(body);
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ path, message: expect.stringMatching(/not allowed/) }]);
  });

  test('the same URL is accepted where OUTBOUND_ALLOWED_NETWORKS lists the network', async () => {
    await workerIn(localApp(), 'http://127.0.0.1:8080/');
  });
});

describe('tenant URLs are checked when called', () => {
  test('a stored loopback runtime is refused by a process that does not allow it: nothing received', async () => {
    const w = await workerIn(localApp(), runtime.url);
    const refused = await strictApp().http.get(`/v1/workers/${w.id}/runtime`).set(...bearer(w.token));
    expect(refused.status).toBe(502);
    expect(refused.body).toEqual({ error: 'worker_runtime_error', message: expect.stringMatching(/not allowed/) });
    expect(runtime.requests).toEqual([]);
    const allowed = await localApp().http.get(`/v1/workers/${w.id}/runtime`).set(...bearer(w.token));
    expect(allowed.status).toBe(200);
    expect(runtime.requests).toHaveLength(1);
  });

  test('a runtime name that resolves to loopback is refused at connect time: nothing received', async () => {
    const lookup = ((hostname: string, _o: unknown, cb: (e: Error | null, a: { address: string; family: number }[]) => void) =>
      hostname === 'runtime.customer.example' ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' }), [])) as unknown as LookupFunction;
    const rebinding = use(createOutbound({ lookup }));
    const w = await workerIn(rebinding, `http://runtime.customer.example:${port()}/`);
    const res = await rebinding.http.get(`/v1/workers/${w.id}/runtime`).set(...bearer(w.token));
    expect(res.status).toBe(502);
    expect(res.body.message).toMatch(/runtime\.customer\.example resolves to 127\.0\.0\.1.*not allowed/);
    expect(runtime.requests).toEqual([]);

    const allowing = use(createOutbound({ lookup, allowedNetworks: ['127.0.0.0/8'] }));
    expect((await allowing.http.get(`/v1/workers/${w.id}/runtime`).set(...bearer(w.token))).status).toBe(200);
    expect(runtime.requests).toHaveLength(1);
  });

  test('a runtime that redirects to a private address: 502, the redirect is not followed', async () => {
    const target = await startFakeRuntime({ kind: 'ok', body: { secret: 'internal' } });
    try {
      runtime.mode = { kind: 'redirect', location: `${target.url}/runtime/versions` };
      const w = await workerIn(localApp(), runtime.url);
      const res = await localApp().http.get(`/v1/workers/${w.id}/runtime`).set(...bearer(w.token));
      expect(res.status).toBe(502);
      expect(res.body).toEqual({ error: 'worker_runtime_error', message: 'The worker runtime answered HTTP 302.' });
      expect(runtime.requests).toHaveLength(1);
      expect(target.requests).toEqual([]);
    } finally {
      runtime.mode = { kind: 'ok', body: { version: '1.0.0' } };
      await target.close();
    }
  });
});
