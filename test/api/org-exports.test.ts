import { createHash } from 'node:crypto';
import pino from 'pino';
import { sql } from 'kysely';
import yauzl from 'yauzl';
import type { ManualClock } from '../support/clock';
import { SecretBox } from '../../src/lib/crypto';
import { JobRunner } from '../../src/jobs';
import { OrganizationExports } from '../../src/exports/job';
import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, PASSWORD, type OrgOwner } from '../support/factories';
import { deliverToFolder } from '../support/mailbox';
import { openNote, parseCheckpoint, parseVerifierKey } from '../support/signed-note';

/**
 * Organization exports through HTTP (docs/organization-exports.md): requested, built by the job
 * runner into the database in chunks, mailed, downloaded and read back with an independent zip
 * reader (yauzl), its manifest's hashes and its audit log's signed checkpoints checked with code
 * that shares nothing with the service's (test/support/signed-note.ts, a canonical JSON written
 * here), no secret anywhere in it, one at a time, another organization's export not found, and a
 * failed build leaving no chunk behind.
 */
let t: TestApp;
const DAY = 24 * 3600_000;
beforeAll(async () => {
  t = await createTestApp({ env: { PUBLIC_BASE_URL: 'https://cp.example.test' } });
});
afterAll(() => t.close());

const clock = () => t.clock as ManualClock;

/** The export job alone, with 4 KiB chunks so a zip spans several. */
async function runExports(): Promise<void> {
  const kind = new OrganizationExports({ db: t.db, clock: t.clock, logger: pino({ level: 'silent' }), secrets: new SecretBox(t.settings.secretKey!), publicBaseUrl: t.settings.publicBaseUrl, settings: t.settings, chunkBytes: 4096 });
  const runner = new JobRunner({ clock: t.clock, logger: pino({ level: 'silent' }), kinds: [kind] });
  await runner.runOnce();
  await runner.stop();
}

async function freshSession(email: string): Promise<string> {
  const res = await t.http.post('/v1/auth/sign-in').send({ email, password: PASSWORD });
  expect(res.status).toBe(200);
  return res.body.session.token;
}

const requestExport = (token: string) => t.http.post('/v1/org/exports').set(...bearer(token));

function download(token: string, id: string) {
  return t.http
    .get(`/v1/org/exports/${id}/download`)
    .set(...bearer(token))
    .buffer(true)
    .parse((res, done) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => done(null, Buffer.concat(chunks)));
    });
}

/** Every file of a zip, read with yauzl (not the library that wrote it). */
function unzip(zip: Buffer): Promise<Map<string, Buffer>> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(zip, { lazyEntries: true }, (err, file) => {
      if (err || !file) return reject(err);
      const out = new Map<string, Buffer>();
      file.on('error', reject);
      file.on('end', () => resolve(out));
      file.on('entry', (entry: yauzl.Entry) => {
        file.openReadStream(entry, (e, stream) => {
          if (e || !stream) return reject(e);
          const parts: Buffer[] = [];
          stream.on('data', (c: Buffer) => parts.push(c));
          stream.on('end', () => {
            out.set(entry.fileName, Buffer.concat(parts));
            file.readEntry();
          });
        });
      });
      file.readEntry();
    });
  });
}

/** RFC 8785-style canonical JSON for our entries (sorted keys, no whitespace), written apart from src/audit/canonical.ts. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const lines = (file: Buffer | undefined) => (file ?? Buffer.alloc(0)).toString('utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);

/** An organization with secrets in several tables, made through the API. */
async function populated(name: string) {
  const owner = await createOrganization(t, name);
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
  const admin = await addMember(t, owner.organizationId, 'admin');
  const team = await t.http.post('/v1/teams').set(...bearer(owner.token)).send({ name: 'Core' });
  expect((await t.http.put(`/v1/teams/${team.body.item.id}/members/${admin.memberId}`).set(...bearer(owner.token))).status).toBeLessThan(300);
  const key = await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'deploy' });
  const scim = await t.http.post('/v1/scim/tokens').set(...bearer(owner.token)).send({ name: 'IdP' });
  const worker = await t.http.post('/v1/workers').set(...bearer(owner.token)).send({ name: 'w' });
  const hook = await t.http.post('/v1/webhooks').set(...bearer(owner.token)).send({ url: 'https://hooks.example.test/in', events: ['*'] });
  const invitation = await t.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email: `invitee-${Date.now()}@example.com`, role: 'member' });
  for (const r of [team, key, scim, worker, hook, invitation]) expect(r.status).toBe(201);
  const secrets = [key.body.key, scim.body.token, worker.body.hostToken, hook.body.secret] as string[];
  return { owner, admin, secrets, teamId: team.body.item.id as string };
}

/** What the database holds as hashes and sealed secrets of the organization: none may be in an export. */
async function storedSecrets(organizationId: string): Promise<string[]> {
  const { rows } = await sql<{ v: string }>`
    SELECT key_hash AS v FROM api_keys WHERE organization_id = ${organizationId}
    UNION ALL SELECT token_hash FROM scim_tokens WHERE organization_id = ${organizationId}
    UNION ALL SELECT host_token_hash FROM workers WHERE organization_id = ${organizationId}
    UNION ALL SELECT host_token_sealed FROM workers WHERE organization_id = ${organizationId}
    UNION ALL SELECT secret_sealed FROM webhook_endpoints WHERE organization_id = ${organizationId}
    UNION ALL SELECT token_hash FROM invitations WHERE organization_id = ${organizationId}`.execute(t.db);
  return rows.map((r) => r.v).filter((v) => typeof v === 'string' && v.length > 0);
}

describe('organization exports', () => {
  let o: Awaited<ReturnType<typeof populated>>;
  let exportId: string;
  let zip: Buffer;
  let files: Map<string, Buffer>;

  beforeAll(async () => {
    o = await populated('Export Co');
    const first = await requestExport(o.owner.token);
    expect(first.status).toBe(202);
    expect(first.body.item).toMatchObject({ status: 'pending', size: null, sha256: null });
    expect(first.body.item.id).toMatch(/^exp_/);
    exportId = first.body.item.id;
    // One at a time.
    const second = await requestExport(o.owner.token);
    expect([second.status, second.body.error]).toEqual([409, 'export_in_progress']);
    await runExports();
    const res = await download(o.owner.token, exportId);
    expect(res.status).toBe(200);
    zip = res.body as Buffer;
    files = await unzip(zip);
  });

  it('is ready with the zip\'s size and SHA-256, and the download is that zip', async () => {
    const got = await t.http.get(`/v1/org/exports/${exportId}`).set(...bearer(o.owner.token));
    expect(got.status).toBe(200);
    const item = got.body.item;
    expect(item).toMatchObject({ id: exportId, status: 'ready', size: zip.length, error: null, expiresAt: new Date(new Date(item.finishedAt).getTime() + 7 * DAY).toISOString() });
    expect(item.sha256).toBe(createHash('sha256').update(zip).digest('hex'));
    const listed = await t.http.get('/v1/org/exports').set(...bearer(o.owner.token));
    expect(listed.body.items.map((e: { id: string }) => e.id)).toEqual([exportId]);
    // Stored in several chunks, in order, which together are the zip.
    const chunks = await t.db.selectFrom('organization_export_chunks').select(['seq', 'data']).where('export_id', '=', exportId).orderBy('seq').execute();
    expect(chunks.length).toBeGreaterThan(1);
    expect(Buffer.concat(chunks.map((c) => Buffer.from(c.data))).equals(zip)).toBe(true);
  });

  it('holds a file per kind and a manifest whose counts and hashes match the files', () => {
    const manifest = JSON.parse(files.get('manifest.json')!.toString('utf8'));
    expect(manifest).toMatchObject({ version: 1, organizationId: o.owner.organizationId });
    expect(manifest.withheld).toMatchObject({ 'api-keys': ['keyHash'], webhooks: ['secretSealed', 'previousSecretSealed'], workers: ['hostTokenHash', 'hostTokenSealed'] });
    const names = manifest.files.map((f: { name: string }) => f.name);
    expect([...files.keys()].sort()).toEqual([...names, 'manifest.json'].sort());
    for (const f of manifest.files as Array<{ name: string; entries: number; sha256: string }>) {
      const body = files.get(f.name)!;
      expect([f.name, createHash('sha256').update(body).digest('hex'), lines(body).length]).toEqual([f.name, f.sha256, f.entries]);
    }
    expect(lines(files.get('organization.ndjson'))).toEqual([expect.objectContaining({ id: o.owner.organizationId, name: 'Export Co' })]);
    expect(lines(files.get('members.ndjson')).map((m) => m.email).sort()).toEqual([o.owner.email, o.admin.email].sort());
    expect(lines(files.get('team-members.ndjson'))).toEqual([expect.objectContaining({ teamId: o.teamId, memberId: o.admin.memberId })]);
    expect(lines(files.get('api-keys.ndjson'))).toEqual([expect.objectContaining({ name: 'deploy' })]);
    expect(lines(files.get('webhooks.ndjson'))).toEqual([expect.objectContaining({ url: 'https://hooks.example.test/in' })]);
  });

  it('holds no secret: no key, token or webhook secret, no stored hash or sealed value, no secret-named field', async () => {
    const everything = [...files.values()].map((b) => b.toString('utf8')).join('\n');
    const stored = await storedSecrets(o.owner.organizationId);
    expect(stored.length).toBeGreaterThanOrEqual(5);
    for (const secret of [...o.secrets, ...stored]) expect(everything.includes(secret)).toBe(false);
    const secretNamed = /(hash|secret|sealed|token|password)/i;
    const keys = new Set<string>();
    for (const [name, body] of files) if (name.endsWith('.ndjson') && name !== 'audit-log.ndjson' && name !== 'audit-chain-head.ndjson') for (const line of lines(body)) for (const k of Object.keys(line)) keys.add(k);
    expect([...keys].filter((k) => secretNamed.test(k))).toEqual([]);
  });

  it('carries the audit log with its chain, ending at a checkpoint that verifies with the published key', async () => {
    const key = parseVerifierKey((await t.http.get('/.well-known/audit-key')).text);
    const entries = lines(files.get('audit-log.ndjson'));
    const checkpoints = lines(files.get('audit-checkpoints.ndjson'));
    expect(entries.length).toBeGreaterThan(5);
    expect(checkpoints.length).toBeGreaterThanOrEqual(1);
    // Recompute the chain: hash = SHA-256(prevHash ‖ canonical entry).
    const hashAt = new Map<number, string>();
    let previous: string | null = null;
    for (const line of entries) {
      const { chain, ...entry } = line as { chain: { seq: number; prevHash: string; hash: string } };
      if (previous !== null) expect(chain.prevHash).toBe(previous);
      expect(createHash('sha256').update(chain.prevHash + canonical(entry), 'utf8').digest('hex')).toBe(chain.hash);
      hashAt.set(chain.seq, chain.hash);
      previous = chain.hash;
    }
    const lastSeq = Math.max(...hashAt.keys());
    for (const c of checkpoints) {
      const text = openNote(c.note as string, key);
      const cp = parseCheckpoint(text);
      expect(cp.origin).toBe(`cp.example.test/audit/${o.owner.organizationId}`);
      expect(cp.rootHash.toString('hex')).toBe(hashAt.get(Number(cp.size)));
    }
    expect(Math.max(...checkpoints.map((c) => Number(c.count)))).toBe(lastSeq);
  });

  it('audits each download and mails the requester', async () => {
    const log = await t.http.get('/v1/audit-logs').query({ action: 'organization.export_downloaded' }).set(...bearer(o.owner.token));
    expect(log.body.items).toEqual([expect.objectContaining({ target: { type: 'organization_export', id: exportId } })]);
    const requested = await t.http.get('/v1/audit-logs').query({ action: 'organization.export_requested' }).set(...bearer(o.owner.token));
    expect(requested.body.items).toHaveLength(1);
    const mail = (await deliverToFolder(t)).filter((m) => m.to === o.owner.email && /export of Export Co is ready/.test(m.subject));
    expect(mail).toHaveLength(1);
    expect(mail[0]!.text).toContain(exportId);
    expect(mail[0]!.text).toContain(createHash('sha256').update(zip).digest('hex'));
  });

  it('is the owner\'s: an admin gets 403, another organization\'s owner 404', async () => {
    const byAdmin = await download(o.admin.token, exportId);
    expect([byAdmin.status, JSON.parse(byAdmin.body.toString()).reason]).toEqual([403, 'owner_required']);
    const other = await createOrganization(t, 'Elsewhere');
    for (const path of [`/v1/org/exports/${exportId}`, `/v1/org/exports/${exportId}/download`]) {
      const res = await t.http.get(path).set(...bearer(other.token));
      expect([path, res.status, res.body.error]).toEqual([path, 404, 'export_not_found']);
    }
    expect((await t.http.get('/v1/org/exports').set(...bearer(other.token))).body.items).toEqual([]);
  });

  it('expires after 7 days: 409 export_expired, and its chunks are removed', async () => {
    clock().advance(7 * DAY + 60_000);
    const token = await freshSession(o.owner.email);
    const res = await t.http.get(`/v1/org/exports/${exportId}/download`).set(...bearer(token));
    expect([res.status, res.body.error]).toEqual([409, 'export_expired']);
    const kind = new OrganizationExports({ db: t.db, clock: t.clock, logger: pino({ level: 'silent' }), secrets: new SecretBox(t.settings.secretKey!), publicBaseUrl: t.settings.publicBaseUrl, settings: t.settings });
    expect(await kind.maintain(t.clock.now())).toBe(1);
    expect(await t.db.selectFrom('organization_export_chunks').select('seq').where('export_id', '=', exportId).execute()).toEqual([]);
  });
});

describe('one at a time', () => {
  it('refuses all but one of concurrent requests (409 export_in_progress)', async () => {
    const owner = await createOrganization(t, 'Racing Co');
    const answers = await Promise.all([0, 1, 2, 3].map(() => requestExport(owner.token)));
    expect(answers.map((r) => r.status).sort()).toEqual([202, 409, 409, 409]);
    expect(answers.filter((r) => r.status === 409).map((r) => r.body.error)).toEqual(['export_in_progress', 'export_in_progress', 'export_in_progress']);
    expect((await t.http.get('/v1/org/exports').set(...bearer(owner.token))).body.items).toHaveLength(1);
  });
});

describe('a failed or interrupted build', () => {
  it('leaves nothing half-written: failed, no chunk, not downloadable; a new request works', async () => {
    const owner: OrgOwner = await createOrganization(t, 'Broken Co');
    for (let i = 0; i < 30; i++) await t.http.post('/v1/teams').set(...bearer(owner.token)).send({ name: `team ${i} ${'x'.repeat(200)}` });
    const req = await requestExport(owner.token);
    expect(req.status).toBe(202);
    // The third chunk cannot be stored.
    await sql`ALTER TABLE organization_export_chunks ADD CONSTRAINT test_chunk_limit CHECK (export_id <> ${sql.lit(req.body.item.id as string)} OR seq < 2)`.execute(t.db);
    try {
      await runExports();
    } finally {
      await sql`ALTER TABLE organization_export_chunks DROP CONSTRAINT test_chunk_limit`.execute(t.db);
    }
    const failed = await t.http.get(`/v1/org/exports/${req.body.item.id}`).set(...bearer(owner.token));
    expect(failed.body.item).toMatchObject({ status: 'failed', size: null, sha256: null, error: expect.stringContaining('could not be built') });
    expect(await t.db.selectFrom('organization_export_chunks').select('seq').where('export_id', '=', req.body.item.id).execute()).toEqual([]);
    const dl = await t.http.get(`/v1/org/exports/${req.body.item.id}/download`).set(...bearer(owner.token));
    expect([dl.status, dl.body.error]).toEqual([409, 'export_not_ready']);
    const again = await requestExport(owner.token);
    expect(again.status).toBe(202);
    await runExports();
    expect((await t.http.get(`/v1/org/exports/${again.body.item.id}`).set(...bearer(owner.token))).body.item.status).toBe('ready');
  });

  it('is built again from the start when its process died (the lease expired)', async () => {
    const owner = await createOrganization(t, 'Crashed Co');
    const req = await requestExport(owner.token);
    const id = req.body.item.id as string;
    // A process took it, wrote a piece, and died.
    await t.db.updateTable('organization_exports').set({ status: 'running', lease_token: 'dead', lease_until: new Date(t.clock.now().getTime() - 1000) }).where('id', '=', id).execute();
    await t.db.insertInto('organization_export_chunks').values({ export_id: id, organization_id: owner.organizationId, seq: 0, data: Buffer.from('half a zip') }).execute();
    await runExports();
    const res = await download(owner.token, id);
    expect(res.status).toBe(200);
    const files = await unzip(res.body as Buffer);
    expect(JSON.parse(files.get('manifest.json')!.toString()).organizationId).toBe(owner.organizationId);
  });
});

describe('while the organization is scheduled for deletion', () => {
  it('its owner can still export it and download the export', async () => {
    const owner = await createOrganization(t, 'Leaving Co');
    expect((await t.http.delete('/v1/org').set(...bearer(owner.token)).send({ confirm: 'Leaving Co' })).status).toBe(202);
    const req = await requestExport(owner.token);
    expect(req.status).toBe(202);
    await runExports();
    const res = await download(owner.token, req.body.item.id);
    expect(res.status).toBe(200);
    const org = lines((await unzip(res.body as Buffer)).get('organization.ndjson'));
    expect(org[0]).toMatchObject({ id: owner.organizationId, deletionScheduledAt: expect.any(String) });
  });
});
