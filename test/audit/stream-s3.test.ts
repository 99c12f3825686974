import { createTestApp, LOCAL_FAKES, type TestApp } from '../support/app';
import { bearer, createOrganization, type OrgOwner } from '../support/factories';
import { auditRunner } from '../support/audit-jobs';
import { startFakeS3, S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, type FakeS3 } from '../fakes/s3';
import { openNote, parseCheckpoint, parseVerifierKey, type VerifierKey } from '../support/signed-note';
import type { JobRunner } from '../../src/jobs';

/**
 * S3 streams (docs/audit.md#streams) against a local S3 that checks SigV4 (test/fakes/s3.ts): one
 * NDJSON object per batch under `<prefix><organizationId>/<first id>-<last id>.ndjson`, every
 * entry once in chain order with its checkpoints; a wrong secret key is refused by the store's
 * signature check and pauses the stream until its config changes, and nothing is lost.
 */
let t: TestApp;
let runner: JobRunner;
let s3: FakeS3;
let key: VerifierKey;

beforeAll(async () => {
  t = await createTestApp({ env: { ...LOCAL_FAKES, AUDIT_CHECKPOINT_EVERY: '3', PUBLIC_BASE_URL: 'https://cp.example.test' } });
  runner = auditRunner(t);
  key = parseVerifierKey((await t.http.get('/.well-known/audit-key')).text);
  s3 = await startFakeS3(['audit-archive']);
}, 120_000);
afterAll(async () => {
  await runner.stop();
  await s3.close();
  await t.close();
});

const teams = async (o: OrgOwner, n: number) => {
  for (let i = 0; i < n; i++) expect((await t.http.post('/v1/teams').set(...bearer(o.token)).send({ name: `T${i}-${Math.random()}` })).status).toBe(201);
};
const status = async (o: OrgOwner, id: string) => (await t.http.get(`/v1/audit-streams/${id}/status`).set(...bearer(o.token))).body;
const chainIds = async (o: OrgOwner) =>
  (await t.db.selectFrom('audit_logs').select(['id']).where('organization_id', '=', o.organizationId).orderBy('seq').execute()).map((r) => r.id);

it('stores each batch as one NDJSON object signed with SigV4; a refused signature pauses the stream, a new key resumes it losing nothing', async () => {
  const o = await createOrganization(t, 'S3');
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', o.organizationId).execute();
  const config = { endpoint: s3.endpoint, region: 'us-east-1', bucket: 'audit-archive', prefix: 'cp/', accessKeyId: S3_ACCESS_KEY_ID };
  const created = await t.http.post('/v1/audit-streams').set(...bearer(o.token)).send({ type: 's3', config: { ...config, secretAccessKey: 'not-the-secret' } });
  expect(created.status).toBe(201);
  expect(created.body.item.config).toEqual(config);
  const id = created.body.item.id as string;
  await teams(o, 2);
  await runner.runOnce();
  const paused = await status(o, id);
  expect(paused).toMatchObject({ state: 'paused', cursor: null });
  expect(paused.lastError).toMatch(/403 SignatureDoesNotMatch/);
  expect(await s3.objects('audit-archive')).toEqual(new Map());

  // A PATCH of config with the right key (the other fields restated) resumes from the cursor.
  expect((await t.http.patch(`/v1/audit-streams/${id}`).set(...bearer(o.token)).send({ config: { ...config, secretAccessKey: S3_SECRET_ACCESS_KEY } })).status).toBe(200);
  await teams(o, 2);
  await runner.runOnce();
  await runner.runOnce();
  const objects = await s3.objects('audit-archive');
  expect(objects.size).toBeGreaterThan(0);
  const delivered: { id: string; kind?: string; note?: string; count?: number }[] = [];
  // Keys sort by their first record's id, which is the chain's order (TypeIDs sort by time).
  for (const [k, body] of [...objects.entries()].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const records = body.trimEnd().split('\n').map((l) => JSON.parse(l) as { id: string; kind?: string; note?: string; count?: number });
    expect(k).toBe(`cp/${o.organizationId}/${records[0]!.id}-${records[records.length - 1]!.id}.ndjson`);
    delivered.push(...records);
  }
  const chain = await chainIds(o);
  expect(delivered.filter((r) => r.kind !== 'checkpoint').map((r) => r.id)).toEqual(chain.slice(1));
  const checkpoints = delivered.filter((r) => r.kind === 'checkpoint');
  expect(checkpoints.length).toBeGreaterThan(0);
  for (const c of checkpoints) expect(Number(parseCheckpoint(openNote(c.note!, key)).size)).toBe(c.count);
  expect(await status(o, id)).toMatchObject({ state: 'active', lag: 0, cursor: chain[chain.length - 1] });
  const row = await t.db.selectFrom('audit_streams').select(['secrets_sealed']).where('id', '=', id).executeTakeFirstOrThrow();
  expect(row.secrets_sealed).not.toContain(S3_SECRET_ACCESS_KEY);
});

it('refuses an s3 config without its secret key, or with a setting of another type', async () => {
  const o = await createOrganization(t, 'S3Bad');
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', o.organizationId).execute();
  const base = { region: 'us-east-1', bucket: 'audit-archive', accessKeyId: 'AKIA' };
  for (const [config, path] of [
    [base, ['body', 'config', 'secretAccessKey']],
    [{ ...base, secretAccessKey: 's', token: 't' }, ['body', 'config', 'token']],
    [{ ...base, secretAccessKey: 's', bucket: 'Not_A_Bucket' }, ['body', 'config', 'bucket']],
  ] as const) {
    const res = await t.http.post('/v1/audit-streams').set(...bearer(o.token)).send({ type: 's3', config });
    expect(res.status).toBe(400);
    expect(res.body.details.map((d: { path: string[] }) => d.path)).toContainEqual(path);
  }
});
