import { createTestApp, type TestApp } from '../support/app';
import { bearer, createOrganization, type OrgOwner } from '../support/factories';
import { EntryWindows } from '../../src/audit-streams/entry-window';
import { entriesAfter } from '../../src/audit';

/**
 * The streams of one organization share what one of them read (docs/audit.md#streams): the
 * second stream takes the entries the first read from the window and asks the database only for
 * what is past them, instead of reading, parsing and converting every entry again. Whatever the
 * window holds, a reader answers exactly what the log answers after its cursor.
 */
let t: TestApp;
let o: OrgOwner;

beforeAll(async () => {
  t = await createTestApp();
  o = await createOrganization(t, 'Window');
  await teams(12);
}, 120_000);
afterAll(async () => {
  await t.close();
});

async function teams(n: number) {
  for (let i = 0; i < n; i++) expect((await t.http.post('/v1/teams').set(...bearer(o.token)).send({ name: `W${i}-${Math.random()}` })).status).toBe(201);
}
/** A window whose database reads are counted (statements and rows). */
function counted(limit?: number) {
  const reads = { statements: 0, rows: 0 };
  const windows = new EntryWindows(limit, async (db, organizationId, afterSeq, take) => {
    const rows = await entriesAfter(db, organizationId, afterSeq, take);
    reads.statements++;
    reads.rows += rows.length;
    return rows;
  });
  return { reads, read: windows.reader(t.db, o.organizationId) };
}
const fromLog = (afterSeq: string, take: number) => entriesAfter(t.db, o.organizationId, afterSeq, take);
const seqs = (rows: { seq: string }[]) => rows.map((r) => r.seq);

describe('entry windows', () => {
  it('two streams a position apart read each entry from the database once', async () => {
    const { reads, read } = counted();
    const [a, b] = await Promise.all([read('0', 500), read('1', 500)]);
    expect(a).toEqual(await fromLog('0', 500));
    expect(b).toEqual(await fromLog('1', 500));
    // The first read all of them; the second only asked for what is past them (nothing yet).
    expect(reads.rows).toBe(a.length);
    expect(reads.statements).toBe(2);
  });

  it('a stream past the window gets the new entries, in order, after what the window holds', async () => {
    const { reads, read } = counted();
    const first = await read('2', 500);
    await teams(3);
    const next = await read('3', 500);
    expect(next).toEqual(await fromLog('3', 500));
    expect(seqs(next).slice(0, first.length - 1)).toEqual(seqs(first).slice(1));
    expect(reads.rows).toBe(first.length + 3);
  });

  it('takes at most `take`, and a cursor behind the window reads from the database', async () => {
    const { reads, read } = counted(5);
    const head = seqs(await fromLog('0', 500)).at(-1)!;
    const late = await read((BigInt(head) - 4n).toString(), 500);
    expect(late).toEqual(await fromLog((BigInt(head) - 4n).toString(), 500));
    expect(await read((BigInt(head) - 3n).toString(), 2)).toEqual(await fromLog((BigInt(head) - 3n).toString(), 2));
    expect(reads.statements).toBe(1);
    // Behind the window (it keeps the newest five): from the database again, and right.
    expect(await read('0', 3)).toEqual(await fromLog('0', 3));
    expect(reads.statements).toBe(2);
  });
});
