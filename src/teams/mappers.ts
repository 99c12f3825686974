import type { components } from '../../generated/api';

export interface TeamRow {
  id: string;
  name: string;
  created_at: Date;
  member_count: number;
}

export function toTeam(row: TeamRow): components['schemas']['Team'] {
  return { id: row.id, name: row.name, memberCount: row.member_count, createdAt: row.created_at.toISOString() };
}
