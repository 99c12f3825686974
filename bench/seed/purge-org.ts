import { sql, type Kysely } from 'kysely';
import type { DB } from '../../src/db/schema';
import { newId } from '../../src/lib/ids';
import { SecretBox } from '../../src/lib/crypto';
import { SECRET_KEY } from '../lib/context';
import { seedLargeOrganization, type LargeOrg } from './large-org';
import { seedTelemetry } from './telemetry';

export interface PurgeOrgOptions {
  name: string;
  members: number;
  auditEntries: number;
  /** Events (the outbox), each with one delivered webhook delivery. */
  events: number;
  /** Telemetry events through ingestion's write path (its rollups and summaries with them). */
  telemetryEvents: number;
  /** Pending invitations, API keys, SAML replay-guard rows, accounts the organization's SCIM made (each). */
  small: number;
}

export interface PurgeOrg extends LargeOrg {
  /** The SAML connection whose replay-guard rows carry only its id (a `delete-via` step of the registry). */
  samlConnectionId: string;
}

/**
 * An organization with rows in most of the tables it owns, set-based (scenario 20): the large
 * organization of scenario 11 (members, every member in "Everyone" and 20 small teams, audit
 * entries, directory users, a SCIM token), a session per member whose active organization it is
 * (detached by the purge), events with a webhook endpoint's deliveries, telemetry, invitations,
 * API keys, a SAML connection with replay-guard rows, and accounts its SCIM made.
 */
export async function seedPurgeOrganization(db: Kysely<DB>, o: PurgeOrgOptions): Promise<PurgeOrg> {
  const org = await seedLargeOrganization(db, { name: o.name, members: o.members, smallTeams: 20, auditEntries: o.auditEntries, directoryUsers: Math.max(10, Math.floor(o.members / 10)) });
  const id = org.organizationId;
  const tag = `0${id.slice(-9)}`;
  const now = new Date();
  await sql`INSERT INTO sessions (id, user_id, token_hash, active_organization_id, created_at, expires_at, authenticated_at, auth_method)
    SELECT 'ses_' || ${tag} || lpad(i::text, 16, '0'), m.user_id, md5(${tag} || i) || md5(i || ${tag}), ${id}, ${now}, ${now}::timestamptz + interval '30 days', ${now}, 'password'
    FROM (SELECT user_id, row_number() OVER (ORDER BY id) AS i FROM members WHERE organization_id = ${id} AND id NOT IN (${org.ownerMemberId}, ${org.callerMemberId})) m`.execute(db);
  const endpointId = newId('webhook');
  await db
    .insertInto('webhook_endpoints')
    .values({ id: endpointId, organization_id: id, url: 'https://hooks.example.test/in', events: ['*'], description: null, enabled: true, secret_sealed: new SecretBox(SECRET_KEY).encrypt('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'), created_at: now, updated_at: now } as never)
    .execute();
  await sql`INSERT INTO events (id, organization_id, type, data, created_at)
    SELECT 'evt_' || ${tag} || lpad(i::text, 16, '0'), ${id}, 'team.created', jsonb_build_object('name', 'Team ' || i), ${now}::timestamptz - i * interval '1 millisecond'
    FROM generate_series(1, ${o.events}) AS i`.execute(db);
  await sql`INSERT INTO webhook_deliveries (id, organization_id, endpoint_id, event_id, event_type, status, attempts, last_status_code, created_at, updated_at)
    SELECT 'whd_' || ${tag} || lpad(i::text, 16, '0'), ${id}, ${endpointId}, 'evt_' || ${tag} || lpad(i::text, 16, '0'), 'team.created', 'succeeded', 1, 200, ${now}, ${now}
    FROM generate_series(1, ${o.events}) AS i`.execute(db);
  await sql`INSERT INTO invitations (id, organization_id, email, email_normalized, role, token_hash, status, invited_by_member_id, created_at, expires_at)
    SELECT 'inv_' || ${tag} || lpad(i::text, 16, '0'), ${id}, 'invitee' || i || '-' || ${tag} || '@bench.test', 'invitee' || i || '-' || ${tag} || '@bench.test', 'member',
      md5('inv' || ${tag} || i), 'pending', ${org.ownerMemberId}, ${now}, ${now}::timestamptz + interval '7 days'
    FROM generate_series(1, ${o.small}) AS i`.execute(db);
  await sql`INSERT INTO api_keys (id, organization_id, member_id, name, prefix, key_hash, created_at)
    SELECT 'key_' || ${tag} || lpad(i::text, 16, '0'), ${id}, m.id, 'key ' || i, 'cpk_bench', md5('key' || ${tag} || i), ${now}
    FROM (SELECT id, row_number() OVER (ORDER BY id) AS i FROM members WHERE organization_id = ${id} ORDER BY id LIMIT ${o.small}) m`.execute(db);
  const samlConnectionId = newId('ssoConnection');
  await db
    .insertInto('sso_connections')
    .values({ id: samlConnectionId, organization_id: id, type: 'saml', name: 'IdP', saml_idp_entity_id: 'https://idp.example.test', saml_idp_sso_url: 'https://idp.example.test/sso', saml_idp_certificate: 'MIIB', created_at: now, updated_at: now } as never)
    .execute();
  await sql`INSERT INTO sso_saml_assertions (connection_id, assertion_id, created_at, expires_at)
    SELECT ${samlConnectionId}, 'a-' || i, ${now}, ${now}::timestamptz + interval '1 day' FROM generate_series(1, ${o.small}) AS i`.execute(db);
  await sql`UPDATE users SET provisioned_by_organization_id = ${id}
    WHERE id IN (SELECT user_id FROM members WHERE organization_id = ${id} AND role = 'member' ORDER BY id LIMIT ${o.small})`.execute(db);
  if (o.telemetryEvents > 0) {
    const memberIds = (await db.selectFrom('members').select('id').where('organization_id', '=', id).orderBy('id').limit(200).execute()).map((m) => m.id);
    await seedTelemetry(db, { organizationId: id, memberIds, events: o.telemetryEvents, days: 30 });
  }
  return { ...org, samlConnectionId };
}
