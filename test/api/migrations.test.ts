import { sql } from 'kysely';
import { migrateToLatest } from '../../src/db/migrate';
import { migrationProvider } from '../../src/db/migrations';
import { createTestDatabase } from '../support/database';
import { connectEmbedded } from '../../src/db/connect';
import { testDbKind } from '../support/env';

describe('migrations', () => {
  it('apply to an empty database and are idempotent', async () => {
    // The server database: a fresh copy of an empty one; the embedded: a brand-new in-memory engine.
    const database = testDbKind() === 'pglite' ? await connectEmbedded() : await createTestDatabase();
    try {
      if (testDbKind() === 'pg') {
        // The per-file copy is already migrated; reset it to empty and migrate again.
        await sql`DROP SCHEMA public CASCADE`.execute(database.db);
        await sql`CREATE SCHEMA public`.execute(database.db);
      }
      const applied = await migrateToLatest(database.db);
      const all = Object.keys(await migrationProvider.getMigrations());
      expect(applied).toEqual(all);
      expect(await migrateToLatest(database.db)).toEqual([]);
      const roles = await database.db.selectFrom('roles').select('key').orderBy('rank', 'desc').execute();
      expect(roles.map((r) => r.key)).toEqual(['owner', 'admin', 'member']);
    } finally {
      await database.close();
    }
  }, 60_000);
});
