import { sql } from 'kysely';
import { createTestApp, type TestApp } from '../support/app';
import { bearer, createOrganization } from '../support/factories';
import { testDbKind } from '../support/env';
import { recordChange, systemContext, REDACTED } from '../../src/audit';
import { redactChanges } from '../../src/audit/redact';
import { chainHash } from '../../src/audit/canonical';
import { entryCanonical } from '../../src/audit/record';
import { ENTRY_COLUMNS, toEntry } from '../../src/audit/entries';

/**
 * The core of the audit log: one entry per change, in the change's transaction, with the actor
 * and request it came from, secrets redacted, chained per organization, and organizations that
 * never wait on each other's chain.
 */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

async function entries(organizationId: string) {
  const rows = await t.db.selectFrom('audit_logs').select([...ENTRY_COLUMNS, 'seq', 'prev_hash', 'hash']).where('organization_id', '=', organizationId).orderBy('seq').execute();
  return rows.map((r) => ({ ...toEntry(r), seq: Number(r.seq), prevHash: r.prev_hash, hash: r.hash }));
}

function expectValidChain(list: Awaited<ReturnType<typeof entries>>) {
  let previous = '';
  list.forEach((e, i) => {
    expect(e.seq).toBe(i + 1);
    expect(e.prevHash).toBe(previous);
    const { seq: _s, prevHash: _p, hash, ...entry } = e;
    expect(hash).toBe(chainHash(previous, entryCanonical(entry)));
    previous = hash;
  });
}

it('writes one entry per change with actor, request, target and changes', async () => {
  const owner = await createOrganization(t, 'Audit Core');
  const created = await t.http.post('/v1/teams').set(...bearer(owner.token)).set('user-agent', 'audit-test/1.0').send({ name: 'Platform' });
  expect(created.status).toBe(201);
  const renamed = await t.http.patch(`/v1/teams/${created.body.item.id}`).set(...bearer(owner.token)).send({ name: 'Platform Ops' });
  expect(renamed.status).toBe(200);

  const list = await entries(owner.organizationId);
  expect(list.map((e) => e.action)).toEqual(['organization.created', 'team.created', 'team.updated']);
  const [, team, rename] = list;
  expect(team).toMatchObject({
    id: expect.stringMatching(/^aud_/),
    actor: { type: 'member', id: owner.userId, memberId: owner.memberId },
    target: { type: 'team', id: created.body.item.id },
    changes: { name: { from: null, to: 'Platform' }, memberIds: { from: null, to: [] } },
    requestId: expect.any(String),
    ip: expect.any(String),
    userAgent: 'audit-test/1.0',
    createdAt: t.clock.now().toISOString(),
  });
  expect(team!.requestId).not.toBe('');
  expect(rename!.changes).toEqual({ name: { from: 'Platform', to: 'Platform Ops' } });
  expectValidChain(list);
});

it('writes no entry when the request fails', async () => {
  const owner = await createOrganization(t, 'Audit Failures');
  expect((await t.http.post('/v1/teams').set(...bearer(owner.token)).send({ name: 'Dup' })).status).toBe(201);
  const before = (await entries(owner.organizationId)).length;
  expect((await t.http.post('/v1/teams').set(...bearer(owner.token)).send({ name: 'Dup' })).status).toBe(409);
  expect((await t.http.patch('/v1/teams/tem_01h2xcejqtf2nbrexx3vqjhp41').set(...bearer(owner.token)).send({ name: 'X' })).status).toBe(404);
  expect((await t.http.post('/v1/teams').set(...bearer(owner.token)).send({ name: '' })).status).toBe(400);
  expect((await entries(owner.organizationId)).length).toBe(before);
});

it('rolls the entry back with its change', async () => {
  const owner = await createOrganization(t, 'Audit Rollback');
  const before = (await entries(owner.organizationId)).length;
  await expect(
    t.db.transaction().execute(async (trx) => {
      await recordChange(trx, systemContext(t.clock, owner.organizationId), { action: 'team.created', target: { type: 'team', id: null } });
      throw new Error('the change fails after its entry was written');
    }),
  ).rejects.toThrow('the change fails');
  expect((await entries(owner.organizationId)).length).toBe(before);
  // The head did not move either: the next entry continues the chain.
  await t.db.transaction().execute((trx) => recordChange(trx, systemContext(t.clock, owner.organizationId), { action: 'team.created', target: { type: 'team', id: null } }));
  expectValidChain(await entries(owner.organizationId));
});

it('redacts secrets by field name and by value, at any depth', async () => {
  const key = 'cpk_' + 'A'.repeat(43);
  expect(
    redactChanges({
      clientSecret: { from: null, to: 'hunter2' },
      apiKey: 'abc',
      password: 'p',
      webhook_secret: { from: 'old', to: 'new' },
      hostToken: 'x',
      tokenUrl: { from: null, to: 'https://auth.example.test/token' },
      name: { from: 'a', to: 'b' },
      note: { from: null, to: `see ${key}` },
      oauthClient: { to: { clientId: 'c', clientSecret: 's' } },
    }),
  ).toEqual({
    clientSecret: { from: null, to: REDACTED },
    apiKey: REDACTED,
    password: REDACTED,
    webhook_secret: { from: REDACTED, to: REDACTED },
    hostToken: REDACTED,
    tokenUrl: { from: null, to: 'https://auth.example.test/token' },
    name: { from: 'a', to: 'b' },
    note: { from: null, to: REDACTED },
    oauthClient: { to: { clientId: 'c', clientSecret: REDACTED } },
  });
  const owner = await createOrganization(t, 'Audit Redaction');
  await t.db.transaction().execute((trx) =>
    recordChange(trx, systemContext(t.clock, owner.organizationId), { action: 'webhook.created', target: { type: 'webhook', id: null }, changes: { secret: { from: null, to: 'whsec_abc' } } }),
  );
  const last = (await entries(owner.organizationId)).pop()!;
  expect(last.changes).toEqual({ secret: { from: null, to: REDACTED } });
});

it('keeps one valid chain under concurrent writes in one organization', async () => {
  const owner = await createOrganization(t, 'Audit Concurrent');
  const results = await Promise.all(Array.from({ length: 12 }, (_, i) => t.http.post('/v1/teams').set(...bearer(owner.token)).send({ name: `T${i}` })));
  expect(results.map((r) => r.status)).toEqual(Array(12).fill(201));
  const list = await entries(owner.organizationId);
  expect(list).toHaveLength(13);
  expectValidChain(list);
});

const serverOnly = testDbKind() === 'pg' ? it : it.skip;
serverOnly('serializes the chain per organization: another organization does not wait', async () => {
  const a = await createOrganization(t, 'Audit Lock A');
  const b = await createOrganization(t, 'Audit Lock B');
  const change = { action: 'team.created', target: { type: 'team', id: null } };
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let wroteA!: () => void;
  const aWritten = new Promise<void>((r) => (wroteA = r));
  // Transaction A writes an entry of organization A and stays open (holding A's chain head).
  const holder = t.db.transaction().execute(async (trx) => {
    await recordChange(trx, systemContext(t.clock, a.organizationId), change);
    wroteA();
    await held;
  });
  await aWritten;
  try {
    // Organization B commits while A's transaction is open; a lock wait would hit the timeout.
    const started = Date.now();
    await t.db.transaction().execute(async (trx) => {
      await sql`SET LOCAL lock_timeout = '2s'`.execute(trx);
      await recordChange(trx, systemContext(t.clock, b.organizationId), change);
    });
    expect(Date.now() - started).toBeLessThan(1000);
    // A second writer of organization A does wait for the first (so A's chain stays one chain).
    await expect(
      t.db.transaction().execute(async (trx) => {
        await sql`SET LOCAL lock_timeout = '200ms'`.execute(trx);
        await recordChange(trx, systemContext(t.clock, a.organizationId), change);
      }),
    ).rejects.toMatchObject({ code: '55P03' });
  } finally {
    release();
    await holder;
  }
  expectValidChain(await entries(a.organizationId));
  expectValidChain(await entries(b.organizationId));
});
