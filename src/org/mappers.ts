import type { components } from '../../generated/api';
import type { UserRow } from '../auth/store';
import type { MemberRow, OrganizationRow, OwnerRow, TeamRow } from './store';

type Schemas = components['schemas'];

export function toUser(row: UserRow): Schemas['User'] {
  return { id: row.id, email: row.email, name: row.name, image: row.image, createdAt: row.created_at.toISOString() };
}

export function toOwner(row: OwnerRow | undefined): Schemas['OrganizationOwner'] | null {
  if (!row) return null;
  return { memberId: row.memberId, userId: row.userId, name: row.name, email: row.email, image: row.image };
}

export function toOrganization(row: OrganizationRow, owner: OwnerRow | undefined): Schemas['Organization'] {
  return {
    id: row.id,
    name: row.name,
    plan: row.plan as Schemas['Plan'],
    owner: toOwner(owner),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export function toMember(row: MemberRow): Schemas['Member'] {
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

export function toTeam(row: TeamRow): Schemas['Team'] {
  return { id: row.id, name: row.name, memberIds: row.member_ids, createdAt: row.created_at.toISOString() };
}
