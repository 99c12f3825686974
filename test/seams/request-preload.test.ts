import type { Membership } from '../../src/domain/principal';
import type { AppDeps } from '../../src/domain/deps';
import { RequestPreload } from '../../src/principal/preload';
import { getOrganizationContext, loadSessionWithOrganization } from '../../src/org/service';
import { membershipOf } from '../../src/principal/membership';
import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization } from '../support/factories';

/**
 * The seam that hands GET /v1/org the context its session check read (src/principal/preload.ts):
 * an entry is found only through the very membership object of its request, answers once, and
 * the preloaded context is exactly what the operation reads without it.
 */
const membership = (): Membership => membershipOf({ organizationId: 'org_x', memberId: 'mem_x', role: 'admin', roleBuiltIn: true, rolePermissions: null });

describe('RequestPreload', () => {
  it('gives the value back through the same membership object, once', () => {
    const preload = new RequestPreload<{ n: number }>();
    const mine = membership();
    preload.keep(mine, { n: 1 });
    expect(preload.take(mine)).toEqual({ n: 1 });
    expect(preload.take(mine)).toBeUndefined();
  });

  it('finds nothing through an equal membership of another request', () => {
    const preload = new RequestPreload<string>();
    const mine = membership();
    const other = membership();
    expect(other).toEqual(mine);
    preload.keep(mine, 'context');
    expect(preload.take(other)).toBeUndefined();
    expect(preload.take(mine)).toBe('context');
  });
});

describe('GET /v1/org preload', () => {
  let t: TestApp;
  let deps: AppDeps;
  beforeAll(async () => {
    t = await createTestApp();
    deps = { db: t.db, clock: t.clock } as unknown as AppDeps;
  });
  afterAll(() => t.close());

  it('preloads, for the session query, exactly the context the operation reads without it', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId, 'admin');
    await t.http.post('/v1/teams').set(...bearer(owner.token)).send({ name: 'Blue', memberIds: [member.memberId] });
    for (const token of [owner.token, member.token]) {
      const principal = await loadSessionWithOrganization(t.db, token, t.clock.now());
      expect(principal?.membership).toBeTruthy();
      const preloaded = await getOrganizationContext(deps, principal!.membership!);
      // The entry was taken: the same call now reads the database.
      const read = await getOrganizationContext(deps, principal!.membership!);
      expect(preloaded).toEqual(read);
      const res = await t.http.get('/v1/org').set(...bearer(token));
      expect(res.status).toBe(200);
      expect(res.body).toEqual(JSON.parse(JSON.stringify(read)));
    }
  });
});
