import pino from 'pino';
import supertest from 'supertest';
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';
import { createApp } from '../../src/app';
import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization } from '../support/factories';

/** Counts the statements the app sends to the database (one per round trip). */
class StatementCounter implements KyselyPlugin {
  count = 0;
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    this.count += 1;
    return args.result;
  }
}

let t: TestApp;
let counter: StatementCounter;
let http: ReturnType<typeof supertest>;
beforeAll(async () => {
  t = await createTestApp();
  counter = new StatementCounter();
  const app = createApp({ db: t.db.withPlugin(counter), clock: t.clock, logger: pino({ level: 'silent' }), fetch: globalThis.fetch, settings: t.settings, validateResponses: true, compileValidatorsAtStart: false });
  http = supertest(app);
});
afterAll(() => t.close());

async function statements(run: () => Promise<unknown>): Promise<number> {
  const before = counter.count;
  await run();
  return counter.count - before;
}

describe('permission checks cost no round trip', () => {
  it('GET /v1/org is one statement for a custom role, its permissions included', async () => {
    const owner = await createOrganization(t);
    const role = await t.http.post('/v1/roles').set(...bearer(owner.token)).send({ key: 'org-reader', name: 'Org reader', permissions: ['org.update'] });
    expect(role.status).toBe(201);
    const member = await addMember(t, owner.organizationId);
    expect((await t.http.post(`/v1/members/${member.memberId}/role`).set(...bearer(owner.token)).send({ role: 'org-reader' })).status).toBe(200);

    let res: supertest.Response | undefined;
    expect(await statements(async () => (res = await http.get('/v1/org').set(...bearer(member.token))))).toBe(1);
    expect(res!.status).toBe(200);
    expect(res!.body.currentMember.role).toBe('org-reader');
    // The permission is decided with the principal: a guarded write by the custom role costs the
    // statements the owner's (built-in role) costs, no more.
    const byCustomRole = await statements(async () => (res = await http.patch('/v1/org').set(...bearer(member.token)).send({ name: 'Renamed' })));
    expect(res!.status).toBe(200);
    const byOwner = await statements(async () => (res = await http.patch('/v1/org').set(...bearer(owner.token)).send({ name: 'Renamed again' })));
    expect(res!.status).toBe(200);
    expect(byCustomRole).toBe(byOwner);
    // A refusal is decided from the principal alone: one statement (the session).
    expect(await statements(async () => (res = await http.post('/v1/teams').set(...bearer(member.token)).send({ name: 'No' })))).toBe(1);
    expect([res!.status, res!.body.reason]).toEqual([403, 'org_admin_required']);
  });
});
