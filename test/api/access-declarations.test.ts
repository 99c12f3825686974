import pino from 'pino';
import type { Document } from 'openapi-backend';
import { createApi } from '../../src/server/router';
import { contract } from '../../src/server/openapi';
import { handlers } from '../../src/server/registry';
import { createDeps } from '../../src/server/app';
import type { AppDeps } from '../../src/domain/deps';
import { listTeams } from '../../src/teams/service';
import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, signUp } from '../support/factories';

/**
 * Who may call an operation is declared in the contract (src/server/access.ts) and checked by the
 * router before the handler: an operation without a declaration stops the start, and the check
 * happens in the router, not in the service.
 */
type Operation = Record<string, unknown>;

/** A copy of the contract with one operation changed. */
function contractWith(operationId: string, change: (op: Operation) => void): Document {
  const copy = structuredClone(contract);
  for (const item of Object.values(copy.paths ?? {})) {
    for (const op of Object.values(item as Record<string, Operation>)) {
      if (op && typeof op === 'object' && op.operationId === operationId) {
        change(op);
        return copy;
      }
    }
  }
  throw new Error(`no operation ${operationId} in the contract`);
}

/** The declarations are read before any dependency is used, so the start fails without a database. */
function build(definition: Document) {
  return createApi({} as AppDeps, handlers, { validateResponses: false, compileValidatorsAtStart: false, contract: definition }).handler;
}

describe('the router at start', () => {
  it('starts on the contract as it is (every operation declares its access)', () => {
    expect(() => build(contract)).not.toThrow();
  });

  it.each([
    ['listTeams', 'x-permission'],
    ['getMe', 'x-access'],
    ['listWorkers', 'x-access'],
    ['workerHeartbeat', 'x-access'],
    ['scimListUsers', 'x-access'],
    ['adminListMail', 'x-platform-admin'],
  ])('refuses to start when %s loses its %s, naming the operation', (operationId, extension) => {
    const definition = contractWith(operationId, (op) => {
      expect(op[extension]).toBeDefined();
      delete op[extension];
    });
    expect(() => build(definition)).toThrow(new RegExp(`^${operationId}: declares no access`));
  });

  it('refuses a permission the catalogue does not know', () => {
    const definition = contractWith('listTeams', (op) => (op['x-permission'] = 'teams.fly'));
    expect(() => build(definition)).toThrow(/^listTeams: x-permission "teams\.fly" is not in src\/access\/permissions\.ts/);
  });

  it('refuses an unknown x-permission-also key', () => {
    const definition = contractWith('getMarketplace', (op) => (op['x-permission-also'] = ['resources.everything']));
    expect(() => build(definition)).toThrow(/^getMarketplace: x-permission-also/);
  });

  it('refuses an unknown access kind, two declarations, and a kind its security cannot answer', () => {
    expect(() => build(contractWith('getMe', (op) => (op['x-access'] = 'anyone')))).toThrow(/^getMe: x-access "anyone" is not one of/);
    expect(() => build(contractWith('listTeams', (op) => (op['x-access'] = 'member')))).toThrow(/^listTeams: declares its access twice/);
    expect(() => build(contractWith('getMe', (op) => (op['x-access'] = 'worker')))).toThrow(/^getMe: x-access: worker needs security to be workerToken alone/);
    expect(() => build(contractWith('workerHeartbeat', (op) => (op['x-access'] = 'member')))).toThrow(/^workerHeartbeat: security workerToken answers no user/);
  });

  it('refuses a declaration on a public operation', () => {
    expect(() => build(contractWith('signIn', (op) => (op['x-access'] = 'account')))).toThrow(/^signIn: is public/);
  });
});

describe('the check happens in the router', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('answers 403 to a custom role lacking the permission, while the service itself no longer checks', async () => {
    const owner = await createOrganization(t);
    const role = await t.http.post('/v1/roles').set(...bearer(owner.token)).send({ key: 'directory', name: 'Directory', permissions: ['members.read'] });
    expect(role.status).toBe(201);
    const member = await addMember(t, owner.organizationId);
    expect((await t.http.post(`/v1/members/${member.memberId}/role`).set(...bearer(owner.token)).send({ role: 'directory' })).status).toBe(200);

    const denied = await t.http.get('/v1/teams').set(...bearer(member.token));
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({ error: 'forbidden', reason: 'org_member_required', message: 'This action needs the permission teams.read.' });
    // What the role does hold still passes the router.
    expect((await t.http.get('/v1/members').set(...bearer(member.token))).status).toBe(200);

    // The service answers the same membership: the 403 above is the router's.
    const deps = createDeps({ db: t.db, clock: t.clock, logger: pino({ level: 'silent' }), fetch, settings: t.settings });
    const page = await listTeams(deps, { organizationId: owner.organizationId, memberId: member.memberId, role: 'directory', permissions: new Set(['members.read']) }, {});
    expect(page.items).toEqual([]);
  });

  it('answers a caller without an organization as membershipOf does, before the handler', async () => {
    const loner = await signUp(t, 'loner');
    const res = await t.http.get('/v1/teams').set(...bearer(loner.token));
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ error: 'organization_not_found' });
  });

  it('refuses an API key on a session-only operation and lets a member read what any member may', async () => {
    const owner = await createOrganization(t);
    const key = await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'ci' });
    expect(key.status).toBe(201);
    expect((await t.http.post('/v1/roles').set('x-api-key', key.body.key).send({ key: 'x', name: 'X', permissions: [] })).status).toBe(401);
    const member = await addMember(t, owner.organizationId);
    expect((await t.http.get('/v1/permissions').set(...bearer(member.token))).status).toBe(200);
  });
});
