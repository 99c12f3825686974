import type { components } from '../../generated/api';
import type { UserRow } from './store';

export function toUser(row: UserRow): components['schemas']['User'] {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    image: row.image,
    emailVerified: row.email_verified_at !== null,
    emailVerifiedAt: row.email_verified_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
  };
}
