import { sql, type RawBuilder } from 'kysely';
import { isoTimestamp } from '../db/json-sql';

/** Columns of a member row and its user, as the query that embeds the member names them. */
export interface MemberJsonColumns {
  id: RawBuilder<unknown>;
  organizationId: RawBuilder<unknown>;
  userId: RawBuilder<unknown>;
  role: RawBuilder<unknown>;
  suspendedAt: RawBuilder<unknown>;
  createdAt: RawBuilder<unknown>;
  userName: RawBuilder<unknown>;
  userEmail: RawBuilder<unknown>;
  userImage: RawBuilder<unknown>;
  directoryUserId: RawBuilder<unknown>;
}

/**
 * The contract's `Member` as JSON made by Postgres: the fields of toMember (./mappers.ts) in its
 * order, plus `directoryUserId`. For answers sent as JSON text (GET /v1/members' first page,
 * GET /v1/org's current member).
 */
export function memberJson(c: MemberJsonColumns): RawBuilder<unknown> {
  return sql`json_build_object(
    'id', ${c.id}, 'organizationId', ${c.organizationId}, 'userId', ${c.userId}, 'role', ${c.role},
    'status', CASE WHEN ${c.suspendedAt} IS NULL THEN 'active' ELSE 'suspended' END,
    'createdAt', ${isoTimestamp(c.createdAt)},
    'user', json_build_object('id', ${c.userId}, 'name', ${c.userName}, 'email', ${c.userEmail}, 'image', ${c.userImage}),
    'directoryUserId', ${c.directoryUserId}
  )`;
}

/** The columns of a derived row `alias` that carries them under their snake_case names (id, user_name, ...). */
export function memberColumnsOf(alias: string): MemberJsonColumns {
  const c = (name: string) => sql.ref(`${alias}.${name}`);
  return {
    id: c('id'),
    organizationId: c('organization_id'),
    userId: c('user_id'),
    role: c('role'),
    suspendedAt: c('suspended_at'),
    createdAt: c('created_at'),
    userName: c('user_name'),
    userEmail: c('user_email'),
    userImage: c('user_image'),
    directoryUserId: c('directory_user_id'),
  };
}
