import { sql } from 'kysely';
import { createTestApp, type TestApp } from '../support/app';
import { foreignKeys, tablesWithOrganizationId } from '../support/org-tables';
import { PURGE_STEPS } from '../../src/org/registry';

/**
 * The purge's table registry (src/org/registry.ts) against the schema as migrations leave it,
 * read from information_schema: a new table holding an organization's rows fails here until the
 * registry says how it is purged.
 */
let t: TestApp;
/** The tables the purge knows, by name. */
const registeredTables = () => new Set(PURGE_STEPS.map((step) => step.table));
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

async function allTables(): Promise<Set<string>> {
  const { rows } = await sql<{ table_name: string }>`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`.execute(t.db);
  return new Set(rows.map((r) => r.table_name));
}

async function columnsOf(table: string): Promise<Set<string>> {
  const { rows } = await sql<{ column_name: string }>`SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = ${table}`.execute(t.db);
  return new Set(rows.map((r) => r.column_name));
}

/** Tables whose rows belong to an organization: an `organization_id` column, or a foreign key into such a table. */
async function organizationTables(): Promise<Set<string>> {
  const owned = new Set(['organizations', ...(await tablesWithOrganizationId(t))]);
  // Another owner's rows pointing at the organization (a user's session) are detached, and
  // what hangs off them is that owner's, not the organization's.
  const notOwned = new Set(PURGE_STEPS.filter((s) => s.kind === 'detach' || s.kind === 'keep').map((s) => s.table));
  const fks = await foreignKeys(t);
  for (let grew = true; grew; ) {
    grew = false;
    for (const fk of fks) {
      if (owned.has(fk.parent) && !notOwned.has(fk.parent) && !owned.has(fk.child)) {
        owned.add(fk.child);
        grew = true;
      }
    }
  }
  return owned;
}

describe('the organization table registry', () => {
  it('names every table that holds an organization\'s rows', async () => {
    const registered = registeredTables();
    const missing = [...(await organizationTables())].filter((table) => !registered.has(table)).sort();
    expect(missing).toEqual([]);
  });

  it('names no table that does not exist, and each step\'s columns exist', async () => {
    const tables = await allTables();
    expect([...registeredTables()].filter((table) => !tables.has(table))).toEqual([]);
    for (const step of PURGE_STEPS) {
      const columns = await columnsOf(step.table);
      if (step.kind === 'delete' && step.table !== 'organizations') expect([step.table, columns.has('organization_id')]).toEqual([step.table, true]);
      if (step.kind === 'delete-via') {
        expect([step.table, columns.has(step.column)]).toEqual([step.table, true]);
        expect([step.parent, (await columnsOf(step.parent)).has('organization_id')]).toEqual([step.parent, true]);
      }
      if (step.kind === 'detach') expect([step.table, columns.has(step.column)]).toEqual([step.table, true]);
    }
  });

  it('purges every child before the table it references, so no delete cascades into many rows', async () => {
    const order = new Map(PURGE_STEPS.map((step, i) => [step.table, i]));
    const removed = new Set(PURGE_STEPS.filter((s) => s.kind === 'delete' || s.kind === 'delete-via').map((s) => s.table));
    const wrong = (await foreignKeys(t))
      .filter((fk) => fk.child !== fk.parent && removed.has(fk.child) && removed.has(fk.parent))
      .filter((fk) => order.get(fk.child)! > order.get(fk.parent)!)
      .map((fk) => `${fk.child} after ${fk.parent}`);
    expect(wrong).toEqual([]);
  });

  // A parent's delete runs one query per referencing table (cascade, SET NULL or check) with `column = $1`:
  // usable indexes lead with the column and are whole or partial on `column IS NOT NULL`.
  const unindexedReferencesTo = async (parent: string) =>
    (
      await sql<{ child: string; column_name: string }>`
      SELECT c.conrelid::regclass::text AS child, a.attname AS column_name
      FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
      WHERE c.contype = 'f' AND c.confrelid = ${parent}::regclass
        AND NOT EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.conrelid AND i.indkey[0] = c.conkey[1]
          AND (i.indpred IS NULL OR pg_get_expr(i.indpred, i.indrelid) = '(' || a.attname || ' IS NOT NULL)'))
      ORDER BY 1, 2`.execute(t.db)
    ).rows.map((r) => `${r.child}.${r.column_name}`);

  it('indexes every column that references members, so a purge batch of members checks each reference by an index', async () => {
    expect(await unindexedReferencesTo('members')).toEqual([]);
  });

  it('indexes every column that references organizations, so the purge\'s last delete checks each table by an index', async () => {
    // Without one, deleting the organization row scans the whole table, every tenant's rows and the purge's dead ones.
    expect(await unindexedReferencesTo('organizations')).toEqual([]);
  });
});
