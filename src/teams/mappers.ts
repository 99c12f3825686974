import type { components } from '../../generated/api';

export interface TeamRow {
  id: string;
  name: string;
  created_at: Date;
  member_ids: string[];
}

export function toTeam(row: TeamRow): components['schemas']['Team'] {
  return { id: row.id, name: row.name, memberIds: row.member_ids, createdAt: row.created_at.toISOString() };
}
