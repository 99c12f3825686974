import type { AppDeps } from '../domain/deps';
import type { Db } from '../db/schema';
import { NotFound } from '../lib/errors';
import { newId } from '../lib/ids';
import { MCP_CONNECTION } from '../grants/resources';
import { activeGrantsOf, replaceActiveGrants, type GrantRow, type GrantTarget } from '../grants/store';
import { existingMemberIds } from '../members/memberships';
import { existingTeamIds } from '../teams/service';
import type { Access } from './store';

/** Who may use a connection: its grants (src/grants, MCP_CONNECTION), as the API shows them. */

/** A grant lets its targets use the connection; the shared grant shape keeps richer roles possible. */
const USE_ROLE = 'viewer';

export type ConnectionGrant = GrantRow & { resource_id: string };

export interface AccessInput {
  orgWide?: boolean;
  memberIds?: string[];
  teamIds?: string[];
}

export function accessOf(grants: ConnectionGrant[]): Access {
  return {
    orgWide: grants.some((g) => g.org_wide),
    memberIds: grants.flatMap((g) => (g.member_id ? [g.member_id] : [])),
    teamIds: grants.flatMap((g) => (g.team_id ? [g.team_id] : [])),
  };
}

export function normalizeAccess(access: AccessInput | undefined): Access {
  return { orgWide: access?.orgWide ?? false, memberIds: access?.memberIds ?? [], teamIds: access?.teamIds ?? [] };
}

export function grantsOf(deps: AppDeps, organizationId: string, connectionIds: string[]): Promise<ConnectionGrant[]> {
  return activeGrantsOf(deps.db, MCP_CONNECTION, organizationId, connectionIds);
}

function targetsOf(access: Access): GrantTarget[] {
  return [
    ...(access.orgWide ? [{ orgWide: true as const }] : []),
    ...access.memberIds.map((memberId) => ({ memberId })),
    ...access.teamIds.map((teamId) => ({ teamId })),
  ];
}

export function replaceGrants(trx: Db, input: { organizationId: string; connectionId: string; access: Access; byMemberId: string; now: Date }) {
  return replaceActiveGrants(trx, MCP_CONNECTION, {
    organizationId: input.organizationId,
    resourceId: input.connectionId,
    targets: targetsOf(input.access),
    role: USE_ROLE,
    byMemberId: input.byMemberId,
    now: input.now,
    newId: () => newId(MCP_CONNECTION.grantIdKind),
  });
}

/** The members and teams granted must be the organization's (404 naming the first that is not). */
export async function checkAccessTargets(deps: AppDeps, organizationId: string, access: Access): Promise<void> {
  const [foundMembers, foundTeams] = await Promise.all([
    existingMemberIds(deps.db, organizationId, access.memberIds),
    existingTeamIds(deps.db, organizationId, access.teamIds),
  ]);
  const members = access.memberIds.filter((id) => !foundMembers.includes(id));
  const teams = access.teamIds.filter((id) => !foundTeams.includes(id));
  if (members.length > 0) throw new NotFound('member_not_found', `No member ${members[0]} in this organization.`);
  if (teams.length > 0) throw new NotFound('team_not_found', `No team ${teams[0]} in this organization.`);
}
