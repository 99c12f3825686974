import { sql, type Transaction } from 'kysely';
import type { DB } from '../db/schema';
import type { AppDeps } from '../domain/deps';
import { newId } from '../lib/ids';
import { isUniqueViolation } from '../db/errors';
import { directoryTeams as teams } from '../teams/service';
import * as directory from './directory-store';
import * as accounts from './accounts';
import { GROUP_SCHEMA, findKey, isObject, normalize, project, type Json, type JsonObject } from './attributes';
import { scimConflict, scimInvalid, scimNotFound } from './errors';
import { FilterCompiler, parseFilter, type Resolver } from './filter';
import { applyPatch, type PatchOperation } from './patch';
import { listResponse, pageWindow, type ListQuery, type ScimCaller } from './common';
import * as store from './group-store';
import { changed, created, deleted, recordChange } from '../audit';
import { isForeignKeyViolation } from '../db/errors';
import { ScimError } from './errors';
import type { ScimTeamRow } from './group-store';

/** A team as a SCIM Group document (the writable part). */
interface GroupDocument {
  displayName: string;
  externalId: string | null;
  memberIds: string[];
}

function documentOf(row: ScimTeamRow, baseUrl: string): JsonObject {
  const doc: JsonObject = { displayName: row.name };
  if (row.external_id !== null) doc.externalId = row.external_id;
  if (row.member_ids) doc.members = row.member_ids.map((id) => ({ value: id, $ref: `${baseUrl}/Users/${id}` }));
  return doc;
}

export function toGroupResource(row: ScimTeamRow, baseUrl: string): JsonObject {
  return {
    schemas: [GROUP_SCHEMA],
    id: row.id,
    ...documentOf(row, baseUrl),
    meta: { resourceType: 'Group', created: row.created_at.toISOString(), lastModified: row.updated_at.toISOString(), location: `${baseUrl}/Groups/${row.id}` },
  };
}

function readDocument(input: unknown): GroupDocument {
  if (!isObject(input)) throw scimInvalid('invalidSyntax', 'The body must be a Group object.');
  const doc = normalize(input) as JsonObject;
  const displayName = doc.displayName;
  if (typeof displayName !== 'string' || displayName.trim() === '' || displayName.length > 255) {
    throw scimInvalid('invalidValue', 'displayName is required (1 to 255 characters).');
  }
  const externalId = doc.externalId;
  if (externalId !== undefined && (typeof externalId !== 'string' || externalId.length > 1024)) throw scimInvalid('invalidValue', 'externalId must be a string.');
  const members = doc.members ?? [];
  if (!Array.isArray(members)) throw scimInvalid('invalidValue', 'members must be a list.');
  const memberIds = members.map((m) => {
    // A bare string is read as {value} (Microsoft's validator adds members so).
    const value = typeof m === 'string' ? m : isObject(m) ? m[findKey(m, 'value') ?? 'value'] : undefined;
    if (typeof value !== 'string' || value === '') throw scimInvalid('invalidValue', 'Every member needs a value (a User id).');
    return value;
  });
  return { displayName, externalId: typeof externalId === 'string' ? externalId : null, memberIds: [...new Set(memberIds)] };
}

function groupResolver(compiler: FilterCompiler): Resolver {
  return (path) => {
    const [head, ...rest] = path;
    if (head === 'displayName' && rest.length === 0) return { kind: 'scalar', sql: sql`t.name`, type: 'string' };
    if (head === 'id' && rest.length === 0) return { kind: 'scalar', sql: sql`t.id`, type: 'string', caseExact: true };
    if (head === 'externalId' && rest.length === 0) return { kind: 'scalar', sql: sql`t.external_id`, type: 'string', caseExact: true };
    if (head === 'meta' && rest[0] === 'created' && rest.length === 1) return { kind: 'scalar', sql: sql`t.created_at`, type: 'datetime' };
    if (head === 'meta' && rest[0] === 'lastModified' && rest.length === 1) return { kind: 'scalar', sql: sql`t.updated_at`, type: 'datetime' };
    if (head === 'members' && rest.length <= 1) {
      const alias = compiler.alias();
      return {
        kind: 'multi',
        from: sql`(SELECT gm.value FROM (${store.GROUP_MEMBERS}) gm) AS ${sql.raw(alias)}`,
        element: (sub) => {
          if (sub.length === 1 && sub[0] === 'value') return { kind: 'scalar', sql: sql.raw(`${alias}.value`), type: 'string', caseExact: true };
          throw scimInvalid('invalidFilter', `Groups cannot be filtered by members.${sub.join('.')}.`);
        },
        rest,
        defaultSub: ['value'],
      };
    }
    throw scimInvalid('invalidFilter', `Groups cannot be filtered by ${path.join('.')}.`);
  };
}

/** `excludedAttributes=members` (Entra's form) or `attributes` without members: skip reading members. */
function wantsMembers(query: { attributes?: string; excludedAttributes?: string }): boolean {
  const names = (v: string | undefined) => (v ?? '').split(',').map((s) => s.trim().toLowerCase()).filter(Boolean);
  const include = names(query.attributes);
  if (include.length > 0) return include.some((n) => n === 'members' || n.startsWith('members.'));
  return !names(query.excludedAttributes).includes('members');
}

export async function listGroups(deps: AppDeps, caller: ScimCaller, query: ListQuery) {
  const compiler = new FilterCompiler();
  const where = query.filter ? compiler.compile(parseFilter(query.filter), groupResolver(compiler)) : null;
  const { startIndex, count } = pageWindow(deps, query);
  const [total, rows] = await Promise.all([
    store.countTeams(deps.db, caller.organizationId, where),
    store.listTeams(deps.db, caller.organizationId, where, wantsMembers(query), startIndex - 1, count),
  ]);
  return listResponse(total, startIndex, rows.map((row) => project(toGroupResource(row, caller.baseUrl), query.attributes, query.excludedAttributes)));
}

async function requireTeam(deps: AppDeps, caller: ScimCaller, id: string, options: { withMembers?: boolean; forUpdate?: boolean; db?: AppDeps['db'] } = {}) {
  const row = await store.findTeam(options.db ?? deps.db, caller.organizationId, id, options.withMembers ?? true, options.forUpdate ?? false);
  if (!row) throw scimNotFound('Group', id);
  return row;
}

export async function getGroup(deps: AppDeps, caller: ScimCaller, id: string, query: { attributes?: string; excludedAttributes?: string }) {
  const row = await requireTeam(deps, caller, id, { withMembers: wantsMembers(query) });
  return project(toGroupResource(row, caller.baseUrl), query.attributes, query.excludedAttributes);
}

function nameTaken(err: unknown): never {
  if (isUniqueViolation(err, 'teams_org_name_key')) throw scimConflict('A Group with this displayName already exists (names are compared ignoring case).');
  throw err;
}

async function checkMembers(db: AppDeps['db'], organizationId: string, ids: string[]): Promise<void> {
  const found = new Set(await directory.existingIds(db, organizationId, ids));
  const missing = ids.filter((id) => !found.has(id));
  if (missing.length > 0) throw scimInvalid('invalidValue', `Not Users of the organization: ${missing.slice(0, 5).map((id) => JSON.stringify(id.slice(0, 100))).join(', ')}.`);
}

/**
 * A Group's members are directory users; the team holds the members of the linked ones (an
 * unlinked one's member joins when it links, see ./linking.ts).
 */
async function changeMembers(trx: Transaction<DB>, organizationId: string, teamId: string, added: string[], removed: string[], now: Date): Promise<void> {
  await directory.addGroupMembers(trx, organizationId, teamId, added, now);
  await teams.addMembers(trx, organizationId, teamId, await directory.membersOf(trx, organizationId, added), now);
  await directory.removeGroupMembers(trx, organizationId, teamId, removed);
  await accounts.leaveTeam(trx, organizationId, teamId, await directory.membersOf(trx, organizationId, removed));
}

export async function createGroup(deps: AppDeps, caller: ScimCaller, body: unknown) {
  const doc = readDocument(body);
  const now = deps.clock.now();
  const id = newId('team');
  try {
    await deps.db.transaction().execute(async (trx) => {
      await checkMembers(trx, caller.organizationId, doc.memberIds);
      await teams.insert(trx, { id, organizationId: caller.organizationId, name: doc.displayName, now });
      await teams.update(trx, caller.organizationId, id, { name: doc.displayName, externalId: doc.externalId, now });
      await changeMembers(trx, caller.organizationId, id, doc.memberIds, [], now);
      await recordChange(trx, deps.audit, { action: 'team.created', target: { type: 'team', id }, changes: created({ name: doc.displayName, externalId: doc.externalId, memberIds: doc.memberIds }) });
    });
  } catch (err) {
    nameTaken(err);
  }
  return toGroupResource(await requireTeam(deps, caller, id), caller.baseUrl);
}

/** PUT and PATCH both end here: name, externalId and the member set replaced in one transaction. */
async function saveGroup(deps: AppDeps, caller: ScimCaller, id: string, next: (current: ScimTeamRow) => GroupDocument, respond: boolean) {
  const now = deps.clock.now();
  try {
    await deps.db.transaction().execute(async (trx) => {
      const current = await requireTeam(deps, caller, id, { forUpdate: true, db: trx });
      const doc = next(current);
      const before = new Set(current.member_ids ?? []);
      const after = new Set(doc.memberIds);
      const added = doc.memberIds.filter((m) => !before.has(m));
      await checkMembers(trx, caller.organizationId, added);
      await teams.update(trx, caller.organizationId, id, { name: doc.displayName, externalId: doc.externalId, now });
      await changeMembers(trx, caller.organizationId, id, added, [...before].filter((m) => !after.has(m)), now);
      await recordChange(trx, deps.audit, {
        action: 'team.updated',
        target: { type: 'team', id },
        changes: changed({ name: current.name, externalId: current.external_id, memberIds: current.member_ids }, { name: doc.displayName, externalId: doc.externalId, memberIds: doc.memberIds }),
      });
    });
  } catch (err) {
    nameTaken(err);
  }
  return respond ? toGroupResource(await requireTeam(deps, caller, id), caller.baseUrl) : null;
}

export async function replaceGroup(deps: AppDeps, caller: ScimCaller, id: string, body: unknown) {
  return (await saveGroup(deps, caller, id, () => readDocument(body), true))!;
}

export async function patchGroup(deps: AppDeps, caller: ScimCaller, id: string, operations: PatchOperation[]) {
  const baseUrl = caller.baseUrl;
  return (await saveGroup(deps, caller, id, (current) => readDocument(applyPatch(documentOf(current, baseUrl), operations) as Json), true))!;
}

export async function deleteGroup(deps: AppDeps, caller: ScimCaller, id: string): Promise<void> {
  try {
    await deps.db.transaction().execute(async (trx) => {
      const before = await requireTeam(deps, caller, id, { forUpdate: true, db: trx });
      await teams.delete(trx, caller.organizationId, id);
      await recordChange(trx, deps.audit, { action: 'team.deleted', target: { type: 'team', id }, changes: deleted({ name: before.name, externalId: before.external_id, memberIds: before.member_ids }) });
    });
  } catch (err) {
    // Another area's row that references the team without a cascade keeps it alive.
    if (isForeignKeyViolation(err)) throw new ScimError(409, undefined, 'The Group is still referenced and cannot be deleted.');
    throw err;
  }
}
