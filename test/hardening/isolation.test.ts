import { createTestApp, type TestApp } from '../support/app';
import { idKindOf, specOperations, type SpecOperation, type Schema } from '../support/spec';
import { snapshot, snapshotDiff, findSecretsInDatabase } from '../support/snapshot';
import { concrete } from '../support/schema-values';
import { send, validRequest, type GenRequest } from './generate';
import { buildWorld, CannotExercise, isTenantScopedParam, missingIdKind, missingWorldId, urlFor, type OrgWorld } from './world';

/**
 * Two organizations with one of every resource each. For every operation that names a resource
 * (in its path or its body), a member of the other organization — its owner, the strongest role
 * it has — gets 404 (never 403, never 200) and nothing changes anywhere. Afterwards no secret
 * handed out while building both worlds is stored or logged in plain text.
 */
let t: TestApp;
let a: OrgWorld;
let b: OrgWorld;
beforeAll(async () => {
  t = await createTestApp();
  a = await buildWorld(t, 'A');
  b = await buildWorld(t, 'B');
  // Using a key records last_used_at (at most once a minute): do it now, so the checks below see
  // only changes a cross-tenant request would make.
  for (const world of [a, b]) expect((await t.http.get('/v1/me').set('x-api-key', world.ownerKey)).status).toBe(200);
}, 240_000);
afterAll(() => t.close());

const operations = specOperations();
// A public operation (SAML metadata) has no caller of another organization to refuse.
const pathScoped = operations.filter((op) => op.auth !== 'public' && op.parameters.some((p) => p.in === 'path' && isTenantScopedParam(op, p)));

interface BodyIdProp {
  name: string;
  /** Which kind of id it takes (from the spec), or null when the spec does not say. */
  prefix: string | null;
  array: boolean;
}

/**
 * Body properties naming a resource of the organization: those whose schema says which kind of
 * id they take (a TypeID pattern or `x-id-prefix`), and those named like an id (`...Id`, `...Ids`)
 * that say nothing, which fail the test with what to add (an id of another system says
 * `x-external-id: true` and is left out).
 */
function bodyIdProps(op: SpecOperation): BodyIdProp[] {
  if (!op.body) return [];
  const props = concrete(op.body.schema).properties ?? {};
  const out: BodyIdProp[] = [];
  for (const [name, raw] of Object.entries(props)) {
    const schema = concrete(raw as Schema);
    const array = schema.type === 'array';
    const kind = idKindOf(array ? concrete(schema.items ?? {}) : schema);
    if (kind === 'external') continue;
    if (kind || /Ids?$/.test(name)) out.push({ name, prefix: kind, array });
  }
  return out;
}
const bodyScoped = operations.filter((op) => op.auth !== 'public' && op.auth !== 'worker' && op.auth !== 'scim' && bodyIdProps(op).length > 0);

function semanticBody(op: SpecOperation, world: OrgWorld): object | undefined {
  if (/^grant\w+Access$/.test(op.operationId)) return { orgMembershipId: world.target.memberId, role: 'editor' };
  return undefined;
}

async function unchanged(run: () => Promise<void>): Promise<string[]> {
  const before = await snapshot(t.db, { exclude: ['rate_limits'] });
  await run();
  return snapshotDiff(before, await snapshot(t.db, { exclude: ['rate_limits'] }));
}

it('has operations to check', () => {
  expect(pathScoped.length).toBeGreaterThan(5);
});

describe.each(pathScoped.map((op) => [op.operationId, op] as const))('%s with ids of another organization', (_id, op) => {
  it('answers 404 to the other organization and changes nothing', async () => {
    // B's own valid request, pointed at A's resources.
    const own = validRequest(op, b);
    const req: GenRequest = { ...own, url: urlFor(op, a), body: semanticBody(op, b) ?? own.body };
    if (op.method === 'get' && (op.auth === 'session' || op.auth === 'any')) {
      // Control: A's owner reaches the same URL, so B's 404 below means "not yours", not "no such id".
      const control = await send(t, req, { authorization: `Bearer ${a.owner.token}` });
      expect({ control: control.status === 404 ? `404 ${JSON.stringify(control.body)}` : 'found' }).toEqual({ control: 'found' });
    }
    const answers: string[] = [];
    const changes = await unchanged(async () => {
      const callers: [string, Record<string, string>][] =
        op.auth === 'scim'
          ? [["B's SCIM token", { authorization: `Bearer ${b.scimToken}` }]]
          : op.auth === 'worker'
          ? [["B's worker token", { 'x-worker-token': b.secrets['B.workerToken'] ?? 'none' }]]
          : [["B's owner session", { authorization: `Bearer ${b.owner.token}` }], ...(op.auth === 'any' ? ([["B's owner API key", { 'x-api-key': b.ownerKey }]] as [string, Record<string, string>][]) : [])];
      for (const [label, headers] of callers) {
        const res = await send(t, req, headers);
        const ok = op.auth === 'worker' ? res.status === 401 || res.status === 404 : res.status === 404;
        if (!ok) answers.push(`${label}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
      }
    });
    expect({ answers, changes }).toEqual({ answers: [], changes: [] });
  });
});

describe.each(bodyScoped.map((op) => [op.operationId, op] as const))('%s with ids of another organization in the body', (_id, op) => {
  it('refuses them (404 or 400) and changes nothing', async () => {
    const own = validRequest(op, b);
    const base = (semanticBody(op, b) ?? (own.body as object)) as Record<string, unknown>;
    const answers: string[] = [];
    const changes = await unchanged(async () => {
      for (const prop of bodyIdProps(op)) {
        if (prop.prefix === null) throw new CannotExercise(missingIdKind(op, `body property "${prop.name}"`, 'xyz'));
        const foreign = a.ids[prop.prefix]?.[0];
        if (!foreign) throw new CannotExercise(missingWorldId(op, `body property "${prop.name}"`, prop.prefix, a));
        const body = { ...base, [prop.name]: prop.array ? [foreign] : foreign };
        if (/^grant\w+Access$/.test(op.operationId)) {
          for (const k of ['orgMembershipId', 'teamId', 'orgWide']) delete body[k];
          body[prop.name] = foreign;
        }
        const res = await send(t, { ...own, url: urlFor(op, b), body }, { authorization: `Bearer ${b.owner.token}` });
        if (![400, 404].includes(res.status)) answers.push(`${prop.name}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
      }
    });
    expect({ answers, changes }).toEqual({ answers: [], changes: [] });
  });
});

describe('secrets after the whole scenario', () => {
  it('stores no session token, API key, invitation token, worker token or client secret in plain text', async () => {
    const secrets = { ...a.secrets, ...b.secrets, 'A.adminSession': a.admin.token, 'B.targetSession': b.target.token };
    expect(Object.keys(secrets).length).toBeGreaterThanOrEqual(6);
    expect(await findSecretsInDatabase(t.db, secrets)).toEqual([]);
  });

  it('logs none of them either', () => {
    const secrets = { ...a.secrets, ...b.secrets };
    const logs = t.logs.join('\n');
    expect(Object.entries(secrets).filter(([, v]) => logs.includes(v)).map(([k]) => k)).toEqual([]);
  });
});
