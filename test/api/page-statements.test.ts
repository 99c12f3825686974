import { sql } from 'kysely';
import { createTestApp, type TestApp } from '../support/app';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { bearer, createMarketplace, createOrganization } from '../support/factories';
import { testDbKind } from '../support/env';
import { newId } from '../../src/lib/ids';

const SIZE = 20_000;

/**
 * Pages of large lists are prepared statements Postgres plans once (sizeInText in
 * src/db/named-statements.ts). With the page size as a parameter, an organization of 20,000
 * members made the generic plan guess a LIMIT of 2,000 rows, so Postgres planned the statement
 * anew on every call. The app runs on a one-connection pool so this test's own query reads the
 * same database session's prepared statements (pg_prepared_statements is per session).
 */
const maybe = testDbKind() === 'pg' ? describe : describe.skip;

maybe('page statements are planned once, at any organization size', () => {
  let database: TestDatabase;
  let t: TestApp;
  beforeAll(async () => {
    database = await createTestDatabase({ max: 1 });
    t = await createTestApp({ database });
  });
  afterAll(async () => {
    await t?.close();
    await database?.close();
  });

  it('GET /v1/members and GET /v1/teams/{id}/members reuse a generic plan in an organization of 20,000', async () => {
    const owner = await createOrganization(t, 'Large');
    const org = owner.organizationId;
    const userIds = Array.from({ length: SIZE }, () => newId('user'));
    const memberIds = Array.from({ length: SIZE }, () => newId('member'));
    await sql`INSERT INTO users (id, email, email_normalized, created_at, updated_at)
      SELECT u.id, 'plan' || u.n || '@example.com', 'plan' || u.n || '@example.com', now(), now() FROM unnest(${userIds}::text[]) WITH ORDINALITY AS u(id, n)`.execute(t.db);
    await sql`INSERT INTO members (id, organization_id, user_id, role, created_at)
      SELECT m.id, ${org}, m.user_id, 'member', now() - make_interval(secs => m.n::int) FROM unnest(${memberIds}::text[], ${userIds}::text[]) WITH ORDINALITY AS m(id, user_id, n)`.execute(t.db);
    const team = await t.http.post('/v1/teams').set(...bearer(owner.token)).send({ name: 'Everyone' });
    expect(team.status).toBe(201);
    const teamId = team.body.item.id as string;
    await sql`INSERT INTO team_members (team_id, member_id, organization_id, created_at)
      SELECT ${teamId}, m.id, ${org}, now() - make_interval(secs => m.n::int) FROM unnest(${memberIds}::text[]) WITH ORDINALITY AS m(id, n)`.execute(t.db);
    await sql`ANALYZE users, members, team_members`.execute(t.db);

    // Postgres tries custom plans for a statement's first five executions, then keeps a generic
    // plan only when it is not costlier than they were.
    for (let i = 0; i < 8; i++) {
      const members = await t.http.get('/v1/members?limit=20').set(...bearer(owner.token));
      expect(members.status).toBe(200);
      expect(members.body.items).toHaveLength(20);
      const teamMembers = await t.http.get(`/v1/teams/${teamId}/members?limit=20`).set(...bearer(owner.token));
      expect(teamMembers.status).toBe(200);
      expect(teamMembers.body.items).toHaveLength(20);
    }
    const plans = await sql<{ name: string; generic_plans: string; custom_plans: string }>`
      SELECT name, generic_plans, custom_plans FROM pg_prepared_statements
      WHERE name LIKE 'session_members_page%' OR name LIKE 'team_members_page%'`.execute(t.db);
    expect(plans.rows.map((r) => r.name).sort()).toEqual(['session_members_page_20', 'team_members_page_21']);
    // With the size as a parameter: 0 generic plans, 8 custom ones.
    for (const row of plans.rows) expect({ name: row.name, reusesGenericPlan: Number(row.generic_plans) > 0 }).toEqual({ name: row.name, reusesGenericPlan: true });
  });

  it('a grant page reuses a generic plan on a resource of 20,000 grants', async () => {
    const owner = await createOrganization(t, 'Granted');
    const marketplace = await createMarketplace(t, owner.token);
    // A long history: every grant to the owner, revoked (no active-target conflict).
    await sql`INSERT INTO marketplace_grants (id, organization_id, marketplace_id, member_id, role, created_by_member_id, created_at, removed_at)
      SELECT g.id, ${owner.organizationId}, ${marketplace.id}, ${owner.memberId}, 'viewer', ${owner.memberId}, now() - make_interval(secs => g.n::int), now()
      FROM unnest(${Array.from({ length: SIZE }, () => newId('marketplaceGrant'))}::text[]) WITH ORDINALITY AS g(id, n)`.execute(t.db);
    await sql`ANALYZE marketplace_grants`.execute(t.db);
    for (let i = 0; i < 8; i++) {
      const page = await t.http.get(`/v1/marketplaces/${marketplace.id}/access?limit=20`).set(...bearer(owner.token));
      expect(page.status).toBe(200);
      expect(page.body.items).toHaveLength(20);
    }
    const plans = await sql<{ name: string; generic_plans: string }>`
      SELECT name, generic_plans FROM pg_prepared_statements WHERE name LIKE 'grants_page_%'`.execute(t.db);
    expect(plans.rows.map((r) => ({ name: r.name, reusesGenericPlan: Number(r.generic_plans) > 0 }))).toEqual([{ name: 'grants_page_marketplace_grants_20', reusesGenericPlan: true }]);
  });
});
