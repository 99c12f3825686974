import { sql, type Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Each organization's number of directory users, kept by statement triggers on directory_users
 * (as teams.member_count is for team_members), so an unfiltered SCIM list's `totalResults` is one
 * row read instead of a count of every directory user: 100,000 of them cost ~8 ms per page to
 * count, more than the page itself. Any writer of directory_users keeps it without knowing.
 * A directory user never moves to another organization, so inserts and deletes are all there is.
 */
const FUNCTIONS = [
  `CREATE FUNCTION directory_user_counts_added() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO directory_user_counts AS c (organization_id, n)
      SELECT organization_id, count(*)::int FROM directory_users_added GROUP BY organization_id
      ON CONFLICT (organization_id) DO UPDATE SET n = c.n + excluded.n;
    RETURN NULL;
  END $$`,
  `CREATE FUNCTION directory_user_counts_removed() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    UPDATE directory_user_counts c SET n = c.n - r.n
      FROM (SELECT organization_id, count(*)::int AS n FROM directory_users_removed GROUP BY organization_id) r
      WHERE c.organization_id = r.organization_id;
    RETURN NULL;
  END $$`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE directory_user_counts (
      organization_id text PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
      n integer NOT NULL
    );

    INSERT INTO directory_user_counts (organization_id, n)
      SELECT organization_id, count(*)::int FROM directory_users GROUP BY organization_id
    `,
  );
  // Function bodies hold semicolons: one statement per query (execScript splits on them).
  for (const fn of FUNCTIONS) await sql.raw(fn).execute(db);
  await execScript(
    db,
    `
    CREATE TRIGGER directory_user_counts_added AFTER INSERT ON directory_users
      REFERENCING NEW TABLE AS directory_users_added FOR EACH STATEMENT EXECUTE FUNCTION directory_user_counts_added();

    CREATE TRIGGER directory_user_counts_removed AFTER DELETE ON directory_users
      REFERENCING OLD TABLE AS directory_users_removed FOR EACH STATEMENT EXECUTE FUNCTION directory_user_counts_removed()
    `,
  );
}
