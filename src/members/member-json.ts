import { isoTimestamp } from '../db/json-sql';

/**
 * SQL expressions of a member row, its user and its service account, as the query that embeds the
 * member names them. A query that reads only people's members (a session's own) passes `NULL` for
 * the service account's.
 */
export interface MemberJsonColumns {
  id: string;
  organizationId: string;
  type: string;
  userId: string;
  role: string;
  suspendedAt: string;
  createdAt: string;
  userName: string;
  userEmail: string;
  userImage: string;
  serviceAccountId: string;
  serviceAccountName: string;
  serviceAccountDisabledAt: string;
  directoryUserId: string;
}

/**
 * The contract's `Member` as JSON made by Postgres: the fields of toMember (./mappers.ts) in its
 * order, plus `directoryUserId`. For answers sent as JSON text (GET /v1/members' pages, GET
 * /v1/org's current member). Constant SQL text (src/db/json-sql.ts says why).
 */
export function memberJson(c: MemberJsonColumns): string {
  return `json_build_object(
    'id', ${c.id}, 'organizationId', ${c.organizationId}, 'type', ${c.type}, 'userId', ${c.userId},
    'serviceAccountId', ${c.serviceAccountId}, 'role', ${c.role},
    'status', CASE WHEN ${c.suspendedAt} IS NULL THEN 'active' ELSE 'suspended' END,
    'createdAt', ${isoTimestamp(c.createdAt)},
    'user', CASE WHEN ${c.userId} IS NULL THEN NULL ELSE json_build_object('id', ${c.userId}, 'name', ${c.userName}, 'email', ${c.userEmail}, 'image', ${c.userImage}) END,
    'serviceAccount', CASE WHEN ${c.serviceAccountId} IS NULL THEN NULL
      ELSE json_build_object('id', ${c.serviceAccountId}, 'name', ${c.serviceAccountName}, 'disabled', ${c.serviceAccountDisabledAt} IS NOT NULL) END,
    'directoryUserId', ${c.directoryUserId}
  )`;
}

/** The columns of a derived row `alias` that carries them under their snake_case names (id, user_name, ...). */
export function memberColumnsOf(alias: string): MemberJsonColumns {
  return {
    id: `${alias}.id`,
    organizationId: `${alias}.organization_id`,
    type: `${alias}.type`,
    userId: `${alias}.user_id`,
    role: `${alias}.role`,
    suspendedAt: `${alias}.suspended_at`,
    createdAt: `${alias}.created_at`,
    userName: `${alias}.user_name`,
    userEmail: `${alias}.user_email`,
    userImage: `${alias}.user_image`,
    serviceAccountId: `${alias}.service_account_id`,
    serviceAccountName: `${alias}.service_account_name`,
    serviceAccountDisabledAt: `${alias}.service_account_disabled_at`,
    directoryUserId: `${alias}.directory_user_id`,
  };
}
