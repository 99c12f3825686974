import { Migrator, sql, type Kysely } from 'kysely';
import { migrateToLatest } from '../../src/db/migrate';
import { migrationProvider } from '../../src/db/migrations';
import { connectEmbedded } from '../../src/db/connect';
import { newId } from '../../src/lib/ids';
import { randomSecret, sha256Hex } from '../../src/lib/crypto';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { testDbKind } from '../support/env';
import { createTestApp } from '../support/app';
import { SCIM_JSON } from '../support/scim';

/**
 * The directory-users migration on a database as today's main left it: migrated up to the
 * migration before it, SCIM data written there the old way (a SCIM User *was* a member, its state
 * in members.external_id / scim_attributes), then migrated to the latest. The identity provider's
 * stored ids keep working, Groups keep their members, and members SCIM never wrote stay members
 * without becoming directory users.
 */
const MIGRATION = '20261127_0705_directory_users';

async function emptyDatabase(): Promise<TestDatabase> {
  if (testDbKind() === 'pglite') return connectEmbedded();
  const database = await createTestDatabase();
  await sql`DROP SCHEMA public CASCADE`.execute(database.db);
  await sql`CREATE SCHEMA public`.execute(database.db);
  return database;
}

it('moves SCIM-provisioned members to linked directory users that keep their ids', async () => {
  const database = await emptyDatabase();
  try {
    const names = Object.keys(await migrationProvider.getMigrations()).sort();
    const previous = names[names.indexOf(MIGRATION) - 1]!;
    const migrator = new Migrator({ db: database.db, provider: migrationProvider, allowUnorderedMigrations: true });
    const { error } = await migrator.migrateTo(previous);
    expect(error).toBeUndefined();

    // Today's main: an organization, its owner (never written by SCIM), two SCIM-provisioned
    // members (one suspended), a removed SCIM member, a team holding a SCIM member and the owner.
    const db = database.db as unknown as Kysely<Record<string, Record<string, unknown>>>;
    const at = new Date('2026-11-20T10:00:00.000Z');
    const org = newId('organization');
    await sql`INSERT INTO organizations (id, name, plan, created_at, updated_at) VALUES (${org}, 'Old SCIM', 'enterprise', ${at}, ${at})`.execute(db);
    for (const key of ['owner', 'admin', 'member']) {
      await sql`INSERT INTO organization_roles (id, organization_id, key, name, description, permissions, built_in, created_at, updated_at)
        VALUES (${newId('role')}, ${org}, ${key}, ${key}, '', '{}', true, ${at}, ${at})`.execute(db);
    }
    const user = async (email: string, password: string | null) => {
      const id = newId('user');
      await sql`INSERT INTO users (id, email, email_normalized, name, image, password_hash, created_at, updated_at) VALUES (${id}, ${email}, ${email.toLowerCase()}, 'N', NULL, ${password}, ${at}, ${at})`.execute(db);
      return id;
    };
    const member = async (userId: string, role: string, scim: { externalId: string | null; attributes: unknown; suspended?: boolean; removed?: boolean } | null) => {
      const id = newId('member');
      await sql`INSERT INTO members (id, organization_id, user_id, role, created_at, removed_at, suspended_at, external_id, scim_attributes, updated_at)
        VALUES (${id}, ${org}, ${userId}, ${role}, ${at}, ${scim?.removed ? at : null}, ${scim?.suspended ? at : null}, ${scim?.externalId ?? null},
                ${scim ? JSON.stringify(scim.attributes) : null}::jsonb, ${at})`.execute(db);
      return id;
    };
    const ownerUser = await user('Owner@Old.example', 'hash');
    const owner = await member(ownerUser, 'owner', null);
    const annUser = await user('Ann@Old.example', null);
    const ann = await member(annUser, 'member', { externalId: 'ext-ann', attributes: { name: { givenName: 'Ann' }, emails: [{ value: 'Ann@Old.example', primary: true, type: 'work' }], title: 'Kept' } });
    const bobUser = await user('bob@old.example', null);
    const bob = await member(bobUser, 'member', { externalId: null, attributes: {}, suspended: true });
    const gone = await member(await user('gone@old.example', null), 'member', { externalId: 'ext-gone', attributes: {}, removed: true });
    const team = newId('team');
    await sql`INSERT INTO teams (id, organization_id, name, created_at, updated_at, external_id) VALUES (${team}, ${org}, 'Old group', ${at}, ${at}, 'grp-1')`.execute(db);
    for (const m of [ann, owner]) await sql`INSERT INTO team_members (team_id, member_id, organization_id, created_at) VALUES (${team}, ${m}, ${org}, ${at})`.execute(db);
    const token = randomSecret('cpscim');
    await sql`INSERT INTO scim_tokens (id, organization_id, name, prefix, token_hash, created_by_member_id, created_at) VALUES (${newId('scimToken')}, ${org}, 'IdP', ${token.slice(0, 14)}, ${sha256Hex(token)}, ${owner}, ${at})`.execute(db);

    expect(await migrateToLatest(database.db)).toContain(MIGRATION);

    const rows = await database.db
      .selectFrom('directory_users')
      .select(['id', 'user_name', 'external_id', 'active', 'email', 'member_id', 'link_reason'])
      .where('organization_id', '=', org)
      .orderBy('user_name')
      .execute();
    expect(rows).toEqual([
      { id: ann, user_name: 'Ann@Old.example', external_id: 'ext-ann', active: true, email: 'Ann@Old.example', member_id: ann, link_reason: null },
      { id: bob, user_name: 'bob@old.example', external_id: null, active: false, email: 'bob@old.example', member_id: bob, link_reason: null },
    ]);
    expect(rows.map((r) => r.id)).not.toContain(gone);
    expect(await database.db.selectFrom('directory_group_members').select(['team_id', 'directory_user_id']).execute()).toEqual([{ team_id: team, directory_user_id: ann }]);
    const provisioned = await database.db.selectFrom('users').select(['id', 'provisioned_by_organization_id']).where('id', 'in', [ownerUser, annUser, bobUser]).orderBy('email').execute();
    expect(Object.fromEntries(provisioned.map((u) => [u.id, u.provisioned_by_organization_id]))).toEqual({ [ownerUser]: null, [annUser]: org, [bobUser]: org });

    // The service on the migrated data: the identity provider's ids answer, its Group too.
    const t = await createTestApp({ database });
    const auth = { authorization: `Bearer ${token}`, accept: SCIM_JSON };
    const got = await t.http.get(`/scim/v2/Users/${ann}`).set(auth);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id: ann, userName: 'Ann@Old.example', externalId: 'ext-ann', active: true, title: 'Kept', name: { givenName: 'Ann' } });
    const list = await t.http.get('/scim/v2/Users').set(auth);
    expect(list.body.totalResults).toBe(2);
    const group = await t.http.get(`/scim/v2/Groups/${team}`).set(auth);
    expect(group.body.members.map((m: { value: string }) => m.value)).toEqual([ann]);
    // Deprovisioning by the old id removes the member it always was.
    expect((await t.http.delete(`/scim/v2/Users/${bob}`).set(auth)).status).toBe(204);
    expect((await database.db.selectFrom('members').select('removed_at').where('id', '=', bob).executeTakeFirstOrThrow()).removed_at).not.toBeNull();
  } finally {
    await database.close();
  }
}, 120_000);
