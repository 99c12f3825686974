import { sql } from 'kysely';
import type { TestApp } from './app';

/** Tables of the public schema with an `organization_id` column, read from information_schema. */
export async function tablesWithOrganizationId(t: TestApp): Promise<string[]> {
  const { rows } = await sql<{ table_name: string }>`SELECT c.table_name FROM information_schema.columns c
    JOIN information_schema.tables tb ON tb.table_schema = c.table_schema AND tb.table_name = c.table_name AND tb.table_type = 'BASE TABLE'
    WHERE c.table_schema = 'public' AND c.column_name = 'organization_id' ORDER BY c.table_name`.execute(t.db);
  return rows.map((r) => r.table_name);
}

/** Every foreign key of the public schema as child table → parent table, with the child's columns. */
export async function foreignKeys(t: TestApp): Promise<Array<{ child: string; parent: string; columns: string[] }>> {
  const { rows } = await sql<{ child: string; parent: string; constraint_name: string; column_name: string }>`
    SELECT tc.table_name AS child, ccu.table_name AS parent, tc.constraint_name, kcu.column_name
    FROM information_schema.table_constraints tc
    JOIN information_schema.key_column_usage kcu ON kcu.constraint_schema = tc.constraint_schema AND kcu.constraint_name = tc.constraint_name
    JOIN (SELECT DISTINCT constraint_schema, constraint_name, table_name FROM information_schema.constraint_column_usage) ccu
      ON ccu.constraint_schema = tc.constraint_schema AND ccu.constraint_name = tc.constraint_name
    WHERE tc.constraint_type = 'FOREIGN KEY' AND tc.table_schema = 'public'
    ORDER BY tc.table_name, tc.constraint_name, kcu.ordinal_position`.execute(t.db);
  const byConstraint = new Map<string, { child: string; parent: string; columns: string[] }>();
  for (const r of rows) {
    const key = `${r.child}.${r.constraint_name}`;
    const fk = byConstraint.get(key) ?? { child: r.child, parent: r.parent, columns: [] };
    fk.columns.push(r.column_name);
    byConstraint.set(key, fk);
  }
  return [...byConstraint.values()];
}

/** How many rows of each table carry `organizationId` (and the organization row itself). */
export async function rowsOfOrganization(t: TestApp, organizationId: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of await tablesWithOrganizationId(t)) {
    const { rows } = await sql<{ n: string | number }>`SELECT count(*) AS n FROM ${sql.table(table)} WHERE organization_id = ${organizationId}`.execute(t.db);
    counts[table] = Number(rows[0]!.n);
  }
  const org = await sql<{ n: string | number }>`SELECT count(*) AS n FROM organizations WHERE id = ${organizationId}`.execute(t.db);
  counts.organizations = Number(org.rows[0]!.n);
  return counts;
}
