import { loadSettings } from '../src/settings';
import { openDatabase } from '../src/db/open';
import { migrateToLatest } from '../src/db/migrate';

/** `npm run db:migrate`: apply pending migrations to the configured database and exit. */
async function run(): Promise<void> {
  const database = await openDatabase(loadSettings());
  try {
    const applied = await migrateToLatest(database.db);
    console.log(applied.length ? `applied: ${applied.join(', ')}` : 'up to date');
  } finally {
    await database.close();
  }
}

run().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
