import { isoTimestamp } from '../db/json-sql';

/** SQL expressions of a member row and its user, as the query that embeds the member names them. */
export interface MemberJsonColumns {
  id: string;
  organizationId: string;
  userId: string;
  role: string;
  suspendedAt: string;
  createdAt: string;
  userName: string;
  userEmail: string;
  userImage: string;
  directoryUserId: string;
}

/**
 * The contract's `Member` as JSON made by Postgres: the fields of toMember (./mappers.ts) in its
 * order, plus `directoryUserId`. For answers sent as JSON text (GET /v1/members' pages, GET
 * /v1/org's current member). Constant SQL text (src/db/json-sql.ts says why).
 */
export function memberJson(c: MemberJsonColumns): string {
  return `json_build_object(
    'id', ${c.id}, 'organizationId', ${c.organizationId}, 'userId', ${c.userId}, 'role', ${c.role},
    'status', CASE WHEN ${c.suspendedAt} IS NULL THEN 'active' ELSE 'suspended' END,
    'createdAt', ${isoTimestamp(c.createdAt)},
    'user', json_build_object('id', ${c.userId}, 'name', ${c.userName}, 'email', ${c.userEmail}, 'image', ${c.userImage}),
    'directoryUserId', ${c.directoryUserId}
  )`;
}

/** The columns of a derived row `alias` that carries them under their snake_case names (id, user_name, ...). */
export function memberColumnsOf(alias: string): MemberJsonColumns {
  return {
    id: `${alias}.id`,
    organizationId: `${alias}.organization_id`,
    userId: `${alias}.user_id`,
    role: `${alias}.role`,
    suspendedAt: `${alias}.suspended_at`,
    createdAt: `${alias}.created_at`,
    userName: `${alias}.user_name`,
    userEmail: `${alias}.user_email`,
    userImage: `${alias}.user_image`,
    directoryUserId: `${alias}.directory_user_id`,
  };
}
