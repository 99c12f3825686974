import type { components } from '../../generated/api';
import type { Role } from '../domain/principal';

export interface MemberRow {
  id: string;
  organization_id: string;
  user_id: string;
  role: Role;
  created_at: Date;
  user_name: string | null;
  user_email: string;
  user_image: string | null;
  /** Set while SCIM has suspended the member; absent where only active members are read. */
  suspended_at?: Date | null;
}

export function toMember(row: MemberRow): components['schemas']['Member'] {
  return {
    id: row.id,
    organizationId: row.organization_id,
    userId: row.user_id,
    role: row.role,
    status: row.suspended_at ? 'suspended' : 'active',
    createdAt: row.created_at.toISOString(),
    user: { id: row.user_id, name: row.user_name, email: row.user_email, image: row.user_image },
  };
}
