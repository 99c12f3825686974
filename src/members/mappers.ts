import type { components } from '../../generated/api';
import type { Role } from '../domain/principal';
import type { MemberType } from '../db/schema';

/**
 * An active member as its queries read it: a person (`type: 'user'`, the user's columns set) or a
 * service account (`type: 'service_account'`, no user: the account's columns set instead).
 */
export interface MemberRow {
  id: string;
  organization_id: string;
  type: MemberType;
  user_id: string | null;
  role: Role;
  created_at: Date;
  user_name: string | null;
  user_email: string | null;
  user_image: string | null;
  service_account_id: string | null;
  service_account_name: string | null;
  service_account_disabled_at: Date | null;
  /** Set while SCIM has suspended the member; absent where only active members are read. */
  suspended_at?: Date | null;
}

type Member = components['schemas']['Member'];

/** The contract's `Member`; member-json.ts writes the same fields in the same order in SQL. */
export function toMember(row: MemberRow): Member {
  return {
    id: row.id,
    organizationId: row.organization_id,
    type: row.type,
    userId: row.user_id,
    serviceAccountId: row.service_account_id,
    role: row.role,
    status: row.suspended_at ? 'suspended' : 'active',
    createdAt: row.created_at.toISOString(),
    user: row.user_id === null ? null : { id: row.user_id, name: row.user_name, email: row.user_email ?? '', image: row.user_image },
    serviceAccount:
      row.service_account_id === null ? null : { id: row.service_account_id, name: row.service_account_name ?? '', disabled: row.service_account_disabled_at !== null },
  };
}
