import { positioned } from '../lib/pagination';
import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import type { Db } from '../db/schema';
import { Conflict, NotFound } from '../lib/errors';
import { newId } from '../lib/ids';
import type { PageRequest } from '../lib/pagination';
import { isForeignKeyViolation, isUniqueViolation } from '../db/errors';
import { authorize } from '../access/roles';
import { toTeam } from './mappers';
import { toMember } from '../members/mappers';
import { existingMemberIds } from '../members/memberships';
import { changed, created, deleted, recordChange, writeWithAudit, type Change } from '../audit';
import * as store from './store';

const teamNotFound = () => new NotFound('team_not_found', 'The team could not be found.');
const memberNotFound = () => new NotFound('member_not_found', 'The member could not be found.');

function translateNameTaken(err: unknown): never {
  if (isUniqueViolation(err, 'teams_org_name_key')) throw new Conflict('team_name_taken', 'A team with this name already exists.');
  throw err;
}

/**
 * A team without members is ONE statement with its audit entry and event (one round trip, atomic
 * on its own). Named members are checked and added in a transaction, as is the rare organization
 * with more matching webhook endpoints than that statement queues deliveries for.
 */
export async function createTeam(deps: AppDeps, membership: Membership, input: { name: string; memberIds?: string[] }) {
  const { organizationId } = membership;
  const memberIds = input.memberIds ?? [];
  const id = newId('team');
  const team = { id, organizationId, name: input.name, now: deps.clock.now() };
  const change: Change = { action: 'team.created', target: { type: 'team', id }, changes: created({ name: input.name, memberIds }) };
  const inTransaction = () =>
    deps.db.transaction().execute(async (trx) => {
      const found = await existingMemberIds(trx, organizationId, memberIds);
      if (found.length !== memberIds.length) throw memberNotFound();
      await store.insertTeam(trx, team);
      await store.addTeamMembers(trx, organizationId, id, memberIds, team.now);
      const row = await store.findTeam(trx, organizationId, id);
      if (!row) throw new Error('new team vanished inside its own transaction');
      await recordChange(trx, deps.audit, change);
      return toTeam(row);
    });
  try {
    if (memberIds.length > 0) return await inTransaction();
    return await writeWithAudit(deps.audit, change, 'team', async (audit) => toTeam(await store.insertTeamAlone(deps.db, team, audit)), inTransaction);
  } catch (err) {
    return translateNameTaken(err);
  }
}

export async function listTeams(deps: AppDeps, membership: Membership, page: PageRequest) {
  return deps.cursors.page(
    'teams',
    page,
    async (after, take) => positioned(await store.listTeams(deps.db, membership.organizationId, after, take)),
    (row) => toTeam(row),
  );
}

export async function getTeam(deps: AppDeps, membership: Membership, teamId: string) {
  const team = await store.findTeam(deps.db, membership.organizationId, teamId);
  if (!team) throw teamNotFound();
  return toTeam(team);
}

export async function renameTeam(deps: AppDeps, membership: Membership, teamId: string, name: string) {
  const { organizationId } = membership;
  try {
    return await deps.db.transaction().execute(async (trx) => {
      const before = await store.findTeam(trx, organizationId, teamId);
      if (!before || !(await store.renameTeam(trx, organizationId, teamId, name, deps.clock.now()))) throw teamNotFound();
      await recordChange(trx, deps.audit, { action: 'team.updated', target: { type: 'team', id: teamId }, changes: changed({ name: before.name }, { name }) });
      return toTeam({ ...before, name });
    });
  } catch (err) {
    return translateNameTaken(err);
  }
}

export async function deleteTeam(deps: AppDeps, membership: Membership, teamId: string): Promise<void> {
  const { organizationId } = membership;
  try {
    await deps.db.transaction().execute(async (trx) => {
      const before = await store.findTeam(trx, organizationId, teamId);
      if (!before || !(await store.deleteTeam(trx, organizationId, teamId))) throw teamNotFound();
      await recordChange(trx, deps.audit, { action: 'team.deleted', target: { type: 'team', id: teamId }, changes: deleted({ name: before.name, memberCount: before.member_count }) });
    });
  } catch (err) {
    // Another area's row that references the team without a cascade keeps it alive.
    if (isForeignKeyViolation(err)) throw new Conflict('team_in_use', 'The team is still referenced and cannot be deleted.');
    throw err;
  }
}

/** A page of the team's members (the members route's items); 404 when the team is not the organization's. */
export async function listTeamMembers(deps: AppDeps, membership: Membership, teamId: string, page: PageRequest) {
  authorize(membership, 'members.read');
  const { organizationId } = membership;
  // The cursor is checked first: one of another list is a 400 whichever team it names.
  const result = await deps.cursors.page(
    `teams/${teamId}/members`,
    page,
    async (after, take) => (await store.listTeamMembers(deps.db, organizationId, teamId, after, take)).map((r) => ({ ...r, createdAt: r.added_at })),
    (row) => ({ ...toMember(row), directoryUserId: row.directory_user_id }),
  );
  // An empty page may be an empty team or no team at all: only then is the team looked up.
  if (result.items.length === 0 && !(await store.findTeam(deps.db, organizationId, teamId))) throw teamNotFound();
  return result;
}

async function requireTeamAndMember(db: Db, organizationId: string, teamId: string, memberId: string) {
  const [team, members] = await Promise.all([store.findTeam(db, organizationId, teamId), existingMemberIds(db, organizationId, [memberId])]);
  if (!team) throw teamNotFound();
  if (members.length === 0) throw memberNotFound();
}

export async function addTeamMember(deps: AppDeps, membership: Membership, teamId: string, memberId: string) {
  const { organizationId } = membership;
  await deps.db.transaction().execute(async (trx) => {
    await requireTeamAndMember(trx, organizationId, teamId, memberId);
    await store.addTeamMembers(trx, organizationId, teamId, [memberId], deps.clock.now());
    await recordChange(trx, deps.audit, { action: 'team.member_added', target: { type: 'team', id: teamId }, changes: { memberId: { from: null, to: memberId } } });
  });
  return getTeam(deps, membership, teamId);
}

export async function removeTeamMember(deps: AppDeps, membership: Membership, teamId: string, memberId: string): Promise<void> {
  const { organizationId } = membership;
  await deps.db.transaction().execute(async (trx) => {
    await requireTeamAndMember(trx, organizationId, teamId, memberId);
    await store.removeTeamMember(trx, organizationId, teamId, memberId);
    await recordChange(trx, deps.audit, { action: 'team.member_removed', target: { type: 'team', id: teamId }, changes: { memberId: { from: memberId, to: null } } });
  });
}

/**
 * What SCIM Groups (src/scim/groups.ts) write, inside their own transaction and audit entry: the
 * team rows and team memberships stay this area's.
 */
export const directoryTeams = {
  insert: store.insertTeam,
  update: store.updateDirectoryTeam,
  delete: store.deleteTeam,
  addMembers: store.addTeamMembers,
  removeMembers: store.removeTeamMembers,
};

/** A removed member leaves all their teams (inside the removal's transaction, src/members). */
export const leaveAllTeams = store.leaveAllTeams;

/** Of `teamIds`, those that are teams of the organization. */
export const existingTeamIds = store.existingTeamIds;
