import { sql, type Kysely } from 'kysely';

/**
 * Runs a script of plain DDL statements one by one. The embedded database takes one statement
 * per query (extended protocol), so scripts are split on `;` at a line end. Keep migration SQL to
 * statements without semicolons inside them (no function bodies).
 */
export async function execScript(db: Kysely<unknown>, script: string): Promise<void> {
  const statements = script
    .split(/;\s*(?:\n|$)/)
    .map((s) => s.replace(/^\s*--.*$/gm, '').trim())
    .filter(Boolean);
  for (const statement of statements) await sql.raw(statement).execute(db);
}
