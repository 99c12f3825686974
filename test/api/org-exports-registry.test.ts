import { sql } from 'kysely';
import { createTestApp, type TestApp } from '../support/app';
import { PURGE_STEPS } from '../../src/org/registry';
import { EXPORT_FILES, isTableFile, NOT_SECRET, SECRET_COLUMN } from '../../src/exports/files';

/**
 * What an export holds (src/exports/files.ts) against the schema as migrations leave it, read from
 * information_schema on both databases: every table of the purge registry is named once (a file,
 * or a reason it is not exported), every column of an exported table is classified (exported,
 * withheld as a secret, or the service's bookkeeping), and no column whose name says it holds a
 * secret can be exported. A migration adding a column fails here until it is classified.
 */
const registeredTables = () => new Set(PURGE_STEPS.map((step) => step.table));

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

async function columnsOf(table: string): Promise<string[]> {
  const { rows } = await sql<{ column_name: string }>`SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = ${table} ORDER BY column_name`.execute(t.db);
  return rows.map((r) => r.column_name);
}

describe('the export registry', () => {
  it('names every table of the purge registry exactly once, and no other', () => {
    const named = EXPORT_FILES.map((e) => e.table);
    expect(named.filter((table, i) => named.indexOf(table) !== i)).toEqual([]);
    expect([...registeredTables()].filter((table) => !named.includes(table)).sort()).toEqual([]);
    expect(named.filter((table) => !registeredTables().has(table)).sort()).toEqual([]);
  });

  it('classifies every column of an exported table, once', async () => {
    for (const file of EXPORT_FILES.filter(isTableFile)) {
      const listed = [...file.columns, ...(file.withheld ?? []), ...(file.internal ?? [])];
      expect([file.table, listed.filter((c, i) => listed.indexOf(c) !== i)]).toEqual([file.table, []]);
      expect([file.table, [...listed].sort()]).toEqual([file.table, await columnsOf(file.table)]);
      expect([file.table, file.key.filter((k) => !file.columns.includes(k))]).toEqual([file.table, []]);
      for (const lookup of file.lookups ?? []) expect((await columnsOf(lookup.table)).includes(lookup.column)).toBe(true);
    }
  });

  it('never exports a column whose name says it holds a secret', async () => {
    const leaking: string[] = [];
    for (const file of EXPORT_FILES.filter(isTableFile)) {
      for (const column of [...file.columns, ...(file.internal ?? [])]) {
        if (SECRET_COLUMN.test(column) && !NOT_SECRET.has(`${file.table}.${column}`)) leaking.push(`${file.table}.${column}`);
      }
      for (const lookup of file.lookups ?? []) if (SECRET_COLUMN.test(lookup.column)) leaking.push(`${file.table} → ${lookup.table}.${lookup.column}`);
    }
    expect(leaking).toEqual([]);
    // Every secret-named column of the schema's exported tables is accounted for as withheld.
    for (const file of EXPORT_FILES.filter(isTableFile)) {
      const secretNamed = (await columnsOf(file.table)).filter((c) => SECRET_COLUMN.test(c) && !NOT_SECRET.has(`${file.table}.${c}`));
      expect([file.table, secretNamed.filter((c) => !(file.withheld ?? []).includes(c))]).toEqual([file.table, []]);
    }
  });

  it('has a file for each kind an export promises, under a name of its own', () => {
    const files = EXPORT_FILES.map((e) => ('file' in e ? e.file : null)).filter((f): f is string => f !== null);
    expect(files.filter((f, i) => files.indexOf(f) !== i)).toEqual([]);
    expect(files).toEqual(
      expect.arrayContaining([
        'organization', 'members', 'invitations', 'teams', 'team-members', 'roles', 'api-keys', 'service-accounts', 'marketplaces', 'plugins',
        'connector-instances', 'connector-instance-grants', 'mcp-connections', 'templates', 'llm-providers', 'workers', 'telemetry-events', 'webhooks',
        'sso-connections', 'sso-domains', 'directory-users', 'directory-group-members', 'audit-log', 'audit-checkpoints',
      ]),
    );
  });
});
