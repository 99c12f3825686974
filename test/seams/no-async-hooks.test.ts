import { AsyncLocalStorage } from 'node:async_hooks';
import { createTestApp, type TestApp } from '../support/app';
import { bearer, createOrganization } from '../support/factories';

/**
 * Serving a request never enters an AsyncLocalStorage: the first AsyncLocalStorage.run (or
 * enterWith) makes Node enable promise hooks for the whole process, and every promise of every
 * request pays for them from then on (about 12% of a request's CPU). The audit context travels on
 * the request's deps instead (src/audit/context.ts). Checked by spying on the prototype rather than
 * with async_hooks.createHook, which would enable the hooks itself. The spies start inside the
 * test: jest runs each hook and test in an AsyncLocalStorage of its own.
 */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterEach(() => jest.restoreAllMocks());
afterAll(() => t.close());

it('audits a change and answers a read without entering an AsyncLocalStorage', async () => {
  const run = jest.spyOn(AsyncLocalStorage.prototype, 'run');
  const enterWith = jest.spyOn(AsyncLocalStorage.prototype, 'enterWith');

  const owner = await createOrganization(t, 'No Hooks');
  const created = await t.http.post('/v1/teams').set(...bearer(owner.token)).send({ name: 'Platform' });
  expect(created.status).toBe(201);
  const read = await t.http.get('/v1/org').set(...bearer(owner.token));
  expect(read.status).toBe(200);

  // The change went through recordChange, with the request's actor.
  const entry = await t.db.selectFrom('audit_logs').select(['actor_type', 'actor_member_id']).where('organization_id', '=', owner.organizationId).where('action', '=', 'team.created').executeTakeFirst();
  expect(entry).toEqual({ actor_type: 'member', actor_member_id: owner.memberId });

  expect(run).not.toHaveBeenCalled();
  expect(enterWith).not.toHaveBeenCalled();
});
