import { sql } from 'kysely';
import type { Db } from '../db/schema';
import { preparedAs } from '../db/connect';

/** A live (unexpired) client secret of the account, as stored: its SHA-256, never the secret. */
export interface LiveSecretRow {
  id: string;
  hash: string;
  lastUsedAt: Date | null;
}

export interface ClientAccountRow {
  organizationId: string;
  memberId: string;
  role: string;
  roleBuiltIn: boolean | null;
  rolePermissions: string[] | null;
  accountLastUsedAt: Date | null;
  secrets: LiveSecretRow[];
}

/**
 * A service account as the authorization server's client, in one prepared statement: enabled, its
 * member active, its organization not scheduled for deletion, its role's permissions now, and its
 * live secrets' hashes (at most five), so the token request's secret check needs no second round
 * trip (./credentials.ts `serviceAccountAsClient`).
 */
export async function findClientAccount(db: Db, serviceAccountId: string, now: Date): Promise<ClientAccountRow | undefined> {
  const result = await sql<Omit<ClientAccountRow, 'secrets'> & { secrets: { id: string; hash: string; lastUsedAt: string | null }[] }>`${preparedAs('service_account_client')}
    SELECT s.organization_id AS "organizationId", s.member_id AS "memberId", s.last_used_at AS "accountLastUsedAt",
      m.role AS "role", r.built_in AS "roleBuiltIn", r.permissions AS "rolePermissions",
      (SELECT coalesce(json_agg(json_build_object('id', k.id, 'hash', k.secret_hash, 'lastUsedAt', k.last_used_at)), '[]'::json)
        FROM service_account_secrets k
        WHERE k.service_account_id = s.id AND (k.expires_at IS NULL OR k.expires_at > ${now})) AS "secrets"
    FROM service_accounts s
    JOIN members m ON m.id = s.member_id
    JOIN organizations o ON o.id = s.organization_id
    LEFT JOIN organization_roles r ON r.organization_id = m.organization_id AND r.key = m.role
    WHERE s.id = ${serviceAccountId} AND s.disabled_at IS NULL AND m.removed_at IS NULL AND m.suspended_at IS NULL AND o.deletion_scheduled_at IS NULL`.execute(db);
  const row = result.rows[0];
  if (!row) return undefined;
  const secrets = typeof row.secrets === 'string' ? (JSON.parse(row.secrets) as typeof row.secrets) : row.secrets;
  return { ...row, secrets: secrets.map((k) => ({ id: k.id, hash: k.hash, lastUsedAt: k.lastUsedAt === null ? null : new Date(k.lastUsedAt) })) };
}
