import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { createTestApp, type TestApp } from '../support/app';
import { bearer, createOrganization, PASSWORD, type OrgOwner } from '../support/factories';
import { auditRunner } from '../support/audit-jobs';
import { openNote, parseCheckpoint, parseVerifierKey, NoteError, type VerifierKey } from '../support/signed-note';
import type { ManualClock } from '../support/clock';
import type { JobRunner } from '../../src/jobs';
import { pruneAuditLog } from '../../src/audit/retention';

/**
 * Signed checkpoints (docs/audit.md): the audit key published at /.well-known/audit-key, the
 * checkpoints the job writes every N entries or interval, each checked by a verifier written from
 * the C2SP texts (test/support/signed-note.ts), POST /v1/audit-logs/verify catching a log cut back
 * or rewritten before a checkpoint (also with its chain recomputed), retention keeping old
 * checkpoints checkable, and the audited export.
 */
let t: TestApp;
let clock: ManualClock;
let runner: JobRunner;
let key: VerifierKey;

beforeAll(async () => {
  t = await createTestApp({ env: { AUDIT_CHECKPOINT_EVERY: '5', AUDIT_CHECKPOINT_INTERVAL: '1h', PUBLIC_BASE_URL: 'https://cp.example.test:8443' } });
  clock = t.clock as ManualClock;
  runner = auditRunner(t);
  const res = await t.http.get('/.well-known/audit-key');
  key = parseVerifierKey(res.text);
}, 120_000);
afterAll(async () => {
  await runner.stop();
  await t.close();
});

const teams = async (org: OrgOwner, n: number, prefix = 'T') => {
  for (let i = 0; i < n; i++) expect((await t.http.post('/v1/teams').set(...bearer(org.token)).send({ name: `${prefix}${i}-${Math.random()}` })).status).toBe(201);
};
const checkpoints = async (org: OrgOwner) => (await t.http.get('/v1/audit-logs/checkpoints').set(...bearer(org.token))).body.items as { id: string; count: number; head: string; note: string; createdAt: string }[];
const verify = (org: OrgOwner, checkpoint: string) => t.http.post('/v1/audit-logs/verify').set(...bearer(org.token)).send({ checkpoint });
const exportLines = async (org: OrgOwner) => {
  const res = await t.http.get('/v1/audit-logs/export').set(...bearer(org.token)).buffer(true).parse((r, done) => {
    let text = '';
    r.on('data', (c: Buffer) => (text += c.toString()));
    r.on('end', () => done(null, text));
  });
  expect(res.status).toBe(200);
  return (res.body as string).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
};
const enterprise = (org: OrgOwner) => t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', org.organizationId).execute();

/** The chain as a customer recomputes it from an export: SHA-256(previous hex ‖ JSON with sorted keys). */
function sortedJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(',')}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${sortedJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
}
function chainHeads(entries: Record<string, unknown>[]): string[] {
  let previous = '';
  return entries.map((e) => (previous = createHash('sha256').update(previous + sortedJson(e), 'utf8').digest('hex')));
}

describe('the verifier of these tests', () => {
  it("accepts the reference note of Go's sumdb/note and refuses it altered", () => {
    const peter = parseVerifierKey('PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW');
    const text = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n";
    const note = `${text}\n\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n`;
    expect(openNote(note, peter)).toBe(text);
    expect(() => openNote(note.replace('cryptography', 'cryptographY'), peter)).toThrow(NoteError);
    expect(() => parseVerifierKey('PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW')).toThrow(/hash does not match/);
  });
});

describe('GET /.well-known/audit-key', () => {
  it('publishes the verifier string, public and as text, named after PUBLIC_BASE_URL', async () => {
    const res = await t.http.get('/.well-known/audit-key');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(res.text).toMatch(/^cp\.example\.test:8443\/audit\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}$/);
    expect(key.name).toBe('cp.example.test:8443/audit');
  });

  it('is one key for every process of a database, its private half sealed', async () => {
    const second = await createTestApp({ database: t.database, env: { PUBLIC_BASE_URL: 'https://cp.example.test:8443' } });
    expect((await second.http.get('/.well-known/audit-key')).text).toBe((await t.http.get('/.well-known/audit-key')).text);
    const rows = await t.db.selectFrom('audit_signing_keys').select(['private_key_sealed']).execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.private_key_sealed).toMatch(/^v1\./);
  });
});

describe('checkpoints', () => {
  it('are written at the first pass, then every AUDIT_CHECKPOINT_EVERY entries, each a checkpoint of the head the export replays to', async () => {
    const org = await createOrganization(t, 'Checkpointed');
    await runner.runOnce();
    const [first] = await checkpoints(org);
    expect(first).toMatchObject({ count: 1, id: expect.stringMatching(/^acp_/) });

    await teams(org, 3);
    await runner.runOnce();
    expect(await checkpoints(org)).toHaveLength(1);
    await teams(org, 2);
    await runner.runOnce();
    const list = await checkpoints(org);
    expect(list.map((c) => c.count)).toEqual([6, 1]);

    await enterprise(org);
    const entries = await exportLines(org);
    const heads = chainHeads(entries);
    for (const c of list) {
      const body = parseCheckpoint(openNote(c.note, key));
      expect(body).toEqual({ origin: `cp.example.test:8443/audit/${org.organizationId}`, size: BigInt(c.count), rootHash: Buffer.from(heads[c.count - 1]!, 'hex'), extensions: [] });
      expect(c.head).toBe(body.rootHash.toString('base64'));
    }
  });

  it('are written each interval while new entries exist, and not without them', async () => {
    const org = await createOrganization(t, 'Hourly');
    await runner.runOnce();
    await teams(org, 1);
    clock.advance(30 * 60_000);
    await runner.runOnce();
    expect((await checkpoints(org)).map((c) => c.count)).toEqual([1]);
    clock.advance(31 * 60_000);
    await runner.runOnce();
    expect((await checkpoints(org)).map((c) => c.count)).toEqual([2, 1]);
    clock.advance(2 * 3_600_000);
    await runner.runOnce();
    expect((await checkpoints(org)).map((c) => c.count)).toEqual([2, 1]);
  });
});

describe('POST /v1/audit-logs/verify', () => {
  async function checkpointed(name: string, entries: number) {
    const org = await createOrganization(t, name);
    await teams(org, entries - 1);
    await runner.runOnce();
    const [held] = await checkpoints(org);
    expect(held!.count).toBe(entries);
    return { org, held: held! };
  }

  it('finds the log consistent with a checkpoint it holds, also after more entries', async () => {
    const { org, held } = await checkpointed('Consistent', 3);
    await teams(org, 2);
    expect((await verify(org, held.note)).body).toEqual({ ok: true, checked: 5, firstBrokenId: null, checkpoint: { count: 3, consistent: true } });
  });

  it('refuses a note that is not signed by the audit key, is altered, or is of another organization', async () => {
    const { org, held } = await checkpointed('Refusals', 2);
    const other = await checkpointed('Other', 1);
    const cases = [
      held.note.replace(/\n\d+\n/, '\n3\n'),
      held.note.replace(/ \S+\n$/, ` ${Buffer.alloc(68, 7).toString('base64')}\n`),
      held.note.replace(/\n\n.*$/s, '\n\n\u2014 someone.example/audit AAAAAAAA\n'),
      'not a note',
      other.held.note,
    ];
    for (const note of cases) {
      const res = await verify(org, note);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ error: 'invalid_request', details: [{ path: ['body', 'checkpoint'] }] });
    }
    expect((await verify(other.org, other.held.note)).body.checkpoint.consistent).toBe(true);
  });

  it('catches the log cut back, even with the chain head recomputed to match', async () => {
    const { org, held } = await checkpointed('Cut', 4);
    await teams(org, 2);
    // Whoever can write the database deletes the last three entries and moves the head back.
    await sql`DELETE FROM audit_logs WHERE organization_id = ${org.organizationId} AND seq > 3`.execute(t.db);
    await sql`UPDATE audit_chain_heads h SET seq = l.seq, hash = l.hash, prev_hash = l.prev_hash FROM audit_logs l WHERE l.organization_id = h.organization_id AND h.organization_id = ${org.organizationId} AND l.seq = 3`.execute(t.db);
    await sql`DELETE FROM audit_checkpoints WHERE organization_id = ${org.organizationId}`.execute(t.db);
    const plain = await t.http.get('/v1/audit-logs/verify').set(...bearer(org.token));
    expect(plain.body).toEqual({ ok: true, checked: 3, firstBrokenId: null });
    expect((await verify(org, held.note)).body).toEqual({ ok: true, checked: 3, firstBrokenId: null, checkpoint: { count: 4, consistent: false } });
    // Writing again until the position exists once more does not bring the checkpoint's head back.
    await teams(org, 2);
    const again = (await verify(org, held.note)).body;
    expect(again).toMatchObject({ ok: true, checkpoint: { count: 4, consistent: false } });
  });

  it('catches an entry rewritten before the checkpoint, with or without the chain recomputed', async () => {
    const { org, held } = await checkpointed('Rewritten', 4);
    const rows = await sql<{ id: string; seq: string }>`SELECT id, seq FROM audit_logs WHERE organization_id = ${org.organizationId} ORDER BY seq`.execute(t.db);
    const victim = rows.rows[1]!.id;
    await sql`ALTER TABLE audit_logs DISABLE TRIGGER audit_logs_append_only`.execute(t.db);
    try {
      await sql`UPDATE audit_logs SET changes = '{"name": {"from": null, "to": "Forged"}}' WHERE id = ${victim}`.execute(t.db);
      expect((await verify(org, held.note)).body).toEqual({ ok: false, checked: 4, firstBrokenId: victim, checkpoint: { count: 4, consistent: false } });
      // Recompute every hash from the forged entry on, as a careful forger would.
      const entries = (await t.http.get('/v1/audit-logs').set(...bearer(org.token))).body.items.reverse() as Record<string, unknown>[];
      const heads = chainHeads(entries);
      for (let i = 0; i < entries.length; i++) {
        await sql`UPDATE audit_logs SET hash = ${heads[i]!}, prev_hash = ${i === 0 ? '' : heads[i - 1]!} WHERE id = ${entries[i]!.id as string}`.execute(t.db);
      }
      await sql`UPDATE audit_chain_heads SET hash = ${heads[heads.length - 1]!}, prev_hash = ${heads[heads.length - 2]!} WHERE organization_id = ${org.organizationId}`.execute(t.db);
    } finally {
      await sql`ALTER TABLE audit_logs ENABLE TRIGGER audit_logs_append_only`.execute(t.db);
    }
    expect((await t.http.get('/v1/audit-logs/verify').set(...bearer(org.token))).body).toEqual({ ok: true, checked: 4, firstBrokenId: null });
    expect((await verify(org, held.note)).body).toEqual({ ok: true, checked: 4, firstBrokenId: null, checkpoint: { count: 4, consistent: false } });
  });

  it('keeps a checkpoint checkable after retention pruned its entry, and not once its kept hash is gone', async () => {
    const { org, held } = await checkpointed('Retained', 2);
    clock.advance(400 * 86_400_000);
    const token = (await t.http.post('/v1/auth/sign-in').send({ email: org.email, password: PASSWORD })).body.session.token as string;
    await pruneAuditLog(t.db, clock, 365);
    const caller = { ...org, token };
    expect((await verify(caller, held.note)).body).toEqual({ ok: true, checked: 1, firstBrokenId: null, checkpoint: { count: 2, consistent: true } });
    await sql`DELETE FROM audit_checkpoints WHERE organization_id = ${org.organizationId} AND seq = 2`.execute(t.db);
    expect((await verify(caller, held.note)).body.checkpoint).toEqual({ count: 2, consistent: false });
  });
});

describe('reading the log is audited', () => {
  it('an export writes audit_log.exported naming who, the range and the format', async () => {
    const org = await createOrganization(t, 'Exported');
    await enterprise(org);
    const from = new Date(clock.now().getTime() - 60_000).toISOString();
    const res = await t.http.get('/v1/audit-logs/export').query({ format: 'csv', from }).set(...bearer(org.token));
    expect(res.status).toBe(200);
    const [entry] = (await t.http.get('/v1/audit-logs').query({ action: 'audit_log.exported' }).set(...bearer(org.token))).body.items;
    expect(entry).toMatchObject({
      actor: { type: 'member', id: org.userId, memberId: org.memberId },
      target: { type: 'audit_log', id: org.organizationId },
      changes: { format: { from: null, to: 'csv' }, rangeFrom: { from: null, to: from }, rangeTo: { from: null, to: null } },
    });
    // A refused export (no plan feature) writes nothing.
    const free = await createOrganization(t, 'Free Export');
    expect((await t.http.get('/v1/audit-logs/export').set(...bearer(free.token))).status).toBe(402);
    expect((await t.http.get('/v1/audit-logs').query({ action: 'audit_log.*' }).set(...bearer(free.token))).body.items).toEqual([]);
  });
});
