import { createTestApp, type TestApp } from '../support/app';
import { bearer } from '../support/factories';
import { ENTERPRISE, PATCH_OP, scimClient, scimError, scimOrganization, type ScimOrg } from '../support/scim';

/**
 * Keys and shapes a client sends to hurt the process rather than a tenant: prototype keys that
 * would write onto Object.prototype (every later request of every tenant then fails), and JSON too
 * deep or too large for the recursive code behind the parser. test/hardening/bad-input.test.ts
 * sends these classes to every operation; this file pins the reported requests themselves.
 */
let t: TestApp;
let org: ScimOrg;
let scim: ReturnType<typeof scimClient>;
let userId: string;
beforeAll(async () => {
  t = await createTestApp();
  org = await scimOrganization(t, 'Hostile');
  scim = scimClient(t, org.token);
  const res = await scim.post('/Users', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: 'victim@corp.example', [ENTERPRISE]: { department: 'R&D' } });
  expect(res.status).toBe(201);
  userId = res.body.id;
}, 300_000);
afterAll(() => t.close());

const POLLUTED = ['x', 'polluted', 'isAdmin'];
afterEach(() => {
  // Should a request pollute on a broken build, later tests must not inherit it.
  for (const key of POLLUTED) delete (Object.prototype as Record<string, unknown>)[key];
});

async function expectUnpolluted() {
  for (const key of POLLUTED) expect(({} as Record<string, unknown>)[key]).toBeUndefined();
  const health = await t.http.get('/health');
  expect(health.status).toBe(200);
}

const patch = (operations: unknown[]) => scim.patch(`/Users/${userId}`, { schemas: [PATCH_OP], Operations: operations });

describe('prototype keys in SCIM', () => {
  it('the reported PATCH (enterprise extension path ending in __proto__) is refused and pollutes nothing', async () => {
    const res = await patch([{ op: 'add', path: `${ENTERPRISE}:__proto__`, value: { x: 'y' } }]);
    expect(scimError(res, 400, 'invalidPath').detail).toContain('__proto__');
    await expectUnpolluted();
  });

  it.each([
    ['core attribute', '__proto__'],
    ['sub-attribute', 'name.__proto__'],
    ['constructor chain', 'constructor.prototype'],
    ['constructor, other case', 'Constructor.Prototype'],
    ['extension sub-attribute', `${ENTERPRISE}:manager.__proto__`],
    ['core URN', 'urn:ietf:params:scim:schemas:core:2.0:User:constructor'],
    ['value filter sub-attribute', 'emails[type eq "work"].constructor'],
  ])('a %s path (%s) is refused', async (_label, path) => {
    for (const op of ['add', 'replace', 'remove']) {
      const res = await patch([{ op, path, value: { polluted: true, x: 'y' } }]);
      expect(scimError(res, 400, 'invalidPath').detail).toMatch(/__proto__|constructor|prototype/i);
    }
    await expectUnpolluted();
  });

  it('a pathless PATCH whose value keys are prototype keys is refused, naming the key', async () => {
    const raw = `{"schemas":["${PATCH_OP}"],"Operations":[{"op":"add","value":{"__proto__":{"isAdmin":true}}}]}`;
    const res = await t.http.patch(`/scim/v2/Users/${userId}`).set({ authorization: `Bearer ${org.token}` }).set('content-type', 'application/scim+json').send(raw);
    expect(scimError(res, 400, 'invalidSyntax').detail).toContain('__proto__');
    await expectUnpolluted();
  });

  it('a prototype key inside a value is refused', async () => {
    const raw = `{"schemas":["${PATCH_OP}"],"Operations":[{"op":"replace","path":"name","value":{"constructor":{"prototype":{"polluted":1}}}}]}`;
    const res = await t.http.patch(`/scim/v2/Users/${userId}`).set({ authorization: `Bearer ${org.token}` }).set('content-type', 'application/scim+json').send(raw);
    expect(scimError(res, 400, 'invalidSyntax').detail).toContain('constructor');
    await expectUnpolluted();
  });

  it('a User created with a __proto__ attribute is refused', async () => {
    const raw = `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"proto@corp.example","__proto__":{"polluted":true}}`;
    const res = await t.http.post('/scim/v2/Users').set({ authorization: `Bearer ${org.token}` }).set('content-type', 'application/scim+json').send(raw);
    expect(scimError(res, 400, 'invalidSyntax').detail).toContain('__proto__');
    await expectUnpolluted();
  });

  it('filters and attribute lists naming prototype keys are refused', async () => {
    scimError(await scim.get('/Users', { filter: '__proto__ pr' }), 400, 'invalidFilter');
    scimError(await scim.get('/Users', { filter: 'name.constructor eq "x"' }), 400, 'invalidFilter');
    scimError(await scim.get(`/Users/${userId}`, { attributes: 'constructor' }), 400, 'invalidPath');
    await expectUnpolluted();
  });

  it('ordinary PATCHes still work after all that', async () => {
    const res = await patch([{ op: 'add', path: `${ENTERPRISE}:costCenter`, value: 'CC-1' }, { op: 'replace', path: 'name.givenName', value: 'Vic' }]);
    expect(res.status).toBe(200);
    expect(res.body[ENTERPRISE]).toEqual({ department: 'R&D', costCenter: 'CC-1' });
    expect(res.body.name).toEqual({ givenName: 'Vic' });
  });
});

describe('prototype keys in free-form objects', () => {
  it.each([
    ['__proto__', '{"name":"T","kind":"worker","content":{"env":{"__proto__":{"polluted":true}}}}', ['body', 'content', 'env', '__proto__']],
    ['constructor', '{"name":"T","kind":"worker","content":{"constructor":{"prototype":{"polluted":true}}}}', ['body', 'content', 'constructor']],
    ['prototype', '{"name":"T","kind":"worker","content":{"a":[{"prototype":1}]}}', ['body', 'content', 'a', '0', 'prototype']],
  ])('template content with a %s key answers 400 naming it', async (_key, raw, path) => {
    const res = await t.http.post('/v1/templates').set(...bearer(org.owner.token)).set('content-type', 'application/json').send(raw);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_request', details: [{ path }] });
    await expectUnpolluted();
  });
});

/** `{"a":{"a":…1…}}` nested `depth` times, as text (building it as an object and stringifying would overflow here). */
const deep = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
const deepArray = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

describe('deep and huge bodies (one limit where bodies are parsed)', () => {
  const json = (req: ReturnType<TestApp['http']['post']>, raw: string, token = org.owner.token) =>
    req.set(...bearer(token)).set('content-type', 'application/json').send(raw);
  const expectRefused = (res: { status: number; body: { error?: string; details?: { path: string[]; message: string }[] } }, message: RegExp) => {
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(res.body.details?.[0]?.message).toMatch(message);
    expect(res.body.details?.[0]?.path[0]).toBe('body');
  };

  it.each([
    ['template content', '/v1/templates', (d: string) => `{"name":"T","kind":"worker","content":${d}}`, ['body', 'content']],
    ['connector config', '/v1/connector-instances', (d: string) => `{"name":"D","connectorType":"gdrive","remoteId":"r","config":${d}}`, ['body', 'config']],
    ['plugin components', '/v1/plugins', (d: string) => `{"name":"P","orgWide":true,"components":[{"input":{"rawSourceText":"x","parserMode":"md","normalizedPayloadJson":${d}}}]}`, ['body', 'components', '0', 'input', 'normalizedPayloadJson']],
  ])('10,000-deep %s answers 400 naming the depth', async (_label, route, body, prefix) => {
    for (const d of [deep(10_000), deepArray(10_000)]) {
      const res = await json(t.http.post(route), body(d));
      expectRefused(res, /deeper than 64 levels/);
      expect(res.body.details![0]!.path.slice(0, prefix.length)).toEqual(prefix);
    }
    await expectUnpolluted();
  });

  it('10,000-deep SCIM attributes and PATCH values answer the SCIM 400', async () => {
    const user = `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"deep@corp.example","name":${deep(10_000)}}`;
    const created = await t.http.post('/scim/v2/Users').set({ authorization: `Bearer ${org.token}` }).set('content-type', 'application/scim+json').send(user);
    expect(scimError(created, 400, 'invalidSyntax').detail).toMatch(/deeper than 64 levels/);
    const ops = `{"schemas":["${PATCH_OP}"],"Operations":[{"op":"add","path":"${ENTERPRISE}:manager","value":${deep(10_000)}}]}`;
    const patched = await t.http.patch(`/scim/v2/Users/${userId}`).set({ authorization: `Bearer ${org.token}` }).set('content-type', 'application/scim+json').send(ops);
    expect(scimError(patched, 400, 'invalidSyntax').detail).toMatch(/deeper than 64 levels/);
  });

  it('a 400,000-element telemetry events array answers 400 naming the size', async () => {
    const raw = `{"events":[${Array.from({ length: 400_000 }, () => '0').join(',')}]}`;
    const res = await json(t.http.post('/v1/telemetry/ingest'), raw);
    expectRefused(res, /more than 100000 values/);
    expect(res.body.details![0]!.path).toEqual(['body', 'events']);
  });

  it('a body at the limits is accepted as far as the shape goes', async () => {
    // 63 levels inside the body's own object: the validator answers about the field, not the depth.
    const res = await json(t.http.post('/v1/templates'), `{"name":"Deep but fine","kind":"worker","content":${deep(62)}}`);
    expect(res.status).toBe(201);
  });
});
