import { sql, type RawBuilder } from 'kysely';
import type { StreamBody } from '../contract';
import type { AppDeps } from '../domain/deps';
import type { Principal } from '../domain/principal';
import { requireFreshSession } from '../access/role-permissions';
import { userIdOf } from '../access/roles';
import type { Db } from '../db/schema';
import { Unauthorized } from '../lib/errors';

/**
 * GET /v1/me/export (docs/accounts.md#exporting-your-own-data): the caller's own data as one JSON
 * document — profile, memberships, sessions, second factors (never a secret, a code or a key),
 * OAuth authorizations, invitations to their address, agents' uses of their MCP connections. Session only and fresh, like the other
 * operations that hand out everything at once. Each section is one query
 * (a person's rows are few), sent as it is read, so the answer starts before the last query.
 */
type Section = (db: Db, userId: string) => Promise<string> | AsyncIterable<string>;

const SECTIONS: Array<[string, Section]> = [
  ['memberships', (db, userId) => jsonArray(db, sql`
    SELECT m.id, m.organization_id AS "organizationId", o.name AS "organizationName", m.role, m.created_at AS "createdAt", m.suspended_at AS "suspendedAt", m.removed_at AS "removedAt"
    FROM members m JOIN organizations o ON o.id = m.organization_id WHERE m.user_id = ${userId} ORDER BY m.created_at, m.id`)],
  ['sessions', (db, userId) => jsonArray(db, sql`
    SELECT id, created_at AS "createdAt", last_used_at AS "lastUsedAt", expires_at AS "expiresAt", revoked_at AS "revokedAt", authenticated_at AS "authenticatedAt",
      auth_method AS "authMethod", second_factor AS "secondFactor", ip, user_agent AS "userAgent", active_organization_id AS "activeOrganizationId"
    FROM sessions WHERE user_id = ${userId} ORDER BY created_at, id`)],
  ['totp', (db, userId) => jsonArray(db, sql`SELECT created_at AS "createdAt", confirmed_at AS "confirmedAt" FROM user_totp WHERE user_id = ${userId}`)],
  ['passkeys', (db, userId) => jsonArray(db, sql`
    SELECT id, name, transports, created_at AS "createdAt", last_used_at AS "lastUsedAt" FROM passkeys WHERE user_id = ${userId} ORDER BY created_at, id`)],
  ['recoveryCodes', (db, userId) => jsonArray(db, sql`SELECT created_at AS "createdAt", used_at AS "usedAt" FROM user_recovery_codes WHERE user_id = ${userId} ORDER BY created_at`)],
  ['authorizations', (db, userId) => jsonArray(db, sql`
    SELECT a.id, a.organization_id AS "organizationId", a.client_id AS "clientId", a.client_name AS "clientName", a.scopes, a.resource,
      a.created_at AS "createdAt", a.last_used_at AS "lastUsedAt", a.expires_at AS "expiresAt", a.revoked_at AS "revokedAt"
    FROM oauth_authorizations a JOIN members m ON m.id = a.member_id WHERE m.user_id = ${userId} ORDER BY a.created_at, a.id`)],
  ['invitations', (db, userId) => jsonArray(db, sql`
    SELECT i.id, i.organization_id AS "organizationId", o.name AS "organizationName", i.role, i.status, i.created_at AS "createdAt", i.expires_at AS "expiresAt",
      i.accepted_at AS "acceptedAt", i.cancelled_at AS "cancelledAt"
    FROM invitations i JOIN organizations o ON o.id = i.organization_id JOIN users u ON u.email_normalized = i.email_normalized
    WHERE u.id = ${userId} ORDER BY i.created_at, i.id`)],
  ['connectionUses', connectionUses],
];

/** Rows of the broker's uses read per page: an agent borrowing every few minutes makes them the one section that grows. */
const USES_PAGE = 1000;

/**
 * The credential broker's loans of the user's MCP connections (src/mcp/uses-store.ts writes them),
 * in every organization, oldest first, by keyset pages of each membership.
 */
type UseCursor = { usedAt: Date; id: string };

function usesPage(db: Db, member: { id: string; organization_id: string }, after: UseCursor | null) {
  return db
    .selectFrom('mcp_connection_uses')
    .select(['id', 'organization_id', 'connection_id', 'worker_id', 'worker_name', 'client_id', 'used_at'])
    .where('organization_id', '=', member.organization_id)
    .where('member_id', '=', member.id)
    .$if(after !== null, (q) => q.where((eb) => eb.or([eb('used_at', '>', after!.usedAt), eb.and([eb('used_at', '=', after!.usedAt), eb('id', '>', after!.id)])])))
    .orderBy('used_at')
    .orderBy('id')
    .limit(USES_PAGE)
    .execute();
}

async function* connectionUses(db: Db, userId: string): AsyncIterable<string> {
  const members = await db.selectFrom('members').select(['id', 'organization_id']).where('user_id', '=', userId).orderBy('created_at').orderBy('id').execute();
  yield '[';
  let first = true;
  for (const member of members) {
    for (let after: UseCursor | null = null; ; ) {
      const page = await usesPage(db, member, after);
      for (const u of page) {
        yield `${first ? '' : ','}${JSON.stringify({ id: u.id, organizationId: u.organization_id, connectionId: u.connection_id, workerId: u.worker_id, workerName: u.worker_name, clientId: u.client_id, usedAt: u.used_at })}`;
        first = false;
      }
      if (page.length < USES_PAGE) break;
      const last = page[page.length - 1]!;
      after = { usedAt: last.used_at, id: last.id };
    }
  }
  yield ']';
}

/** Rows as one JSON array text (timestamps as the API writes them: Date's ISO 8601 in UTC). */
async function jsonArray(db: Db, query: RawBuilder<unknown>): Promise<string> {
  const { rows } = await query.execute(db);
  return JSON.stringify(rows);
}

export async function exportMyData(deps: AppDeps, principal: Principal): Promise<StreamBody> {
  requireFreshSession(principal, deps.clock.now(), deps.settings.freshSessionMaxAgeMs);
  const userId = userIdOf(principal);
  const profile = await deps.db
    .selectFrom('users')
    .select(['id', 'email', 'name', 'image', 'email_verified_at', 'is_platform_admin', 'created_at', 'updated_at'])
    .where('id', '=', userId)
    .executeTakeFirst();
  if (!profile) throw new Unauthorized();
  const head = {
    version: 1,
    exportedAt: deps.clock.now().toISOString(),
    profile: {
      id: profile.id,
      email: profile.email,
      name: profile.name,
      image: profile.image,
      emailVerifiedAt: profile.email_verified_at?.toISOString() ?? null,
      isPlatformAdmin: profile.is_platform_admin,
      createdAt: profile.created_at.toISOString(),
      updatedAt: profile.updated_at.toISOString(),
    },
  };
  const db = deps.db;
  async function* stream(): StreamBody {
    yield JSON.stringify(head).slice(0, -1);
    for (const [name, read] of SECTIONS) {
      const part = read(db, userId);
      if (typeof part === 'object' && Symbol.asyncIterator in part) {
        yield `,${JSON.stringify(name)}:`;
        yield* part;
      } else yield `,${JSON.stringify(name)}:${await part}`;
    }
    yield '}\n';
  }
  return stream();
}
