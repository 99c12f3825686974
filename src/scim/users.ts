import { sql } from 'kysely';
import type { AppDeps } from '../domain/deps';
import { newId } from '../lib/ids';
import { isUniqueViolation } from '../db/errors';
import { changed, created, deleted, recordChange, type Changes } from '../audit';
import { ENTERPRISE_SCHEMA, USER_SCHEMA, attributeObject, isObject, normalize, project, toBoolean, type Json, type JsonObject } from './attributes';
import { ScimError, scimConflict, scimInvalid, scimNotFound } from './errors';
import { FilterCompiler, parseFilter, type Resolver } from './filter';
import { applyPatch, type PatchOperation } from './patch';
import { listResponse, pageWindow, type ListQuery, type ScimCaller } from './common';
import { emailToLink, followRename, link, relinkSharers, type LinkTarget } from './linking';
import * as accounts from './accounts';
import * as store from './directory-store';
import type { DirectoryUserRow } from './directory-store';

/** Attributes that are columns or never stored; everything else is kept as the IdP sent it. */
const NOT_STORED = new Set(['id', 'meta', 'schemas', 'password', 'groups', 'userName', 'active', 'externalId']);
const MAX_ATTRIBUTES_BYTES = 64 * 1024;
const MAX_USER_NAME = 255;

/** The writable part of a User: `userName`, `active`, `externalId` and the stored attributes. */
export interface UserDocument {
  userName: string;
  active: boolean | undefined;
  externalId: string | null;
  attributes: JsonObject;
}

/** A directory user's User document: exactly what the identity provider stored. */
function documentOf(row: DirectoryUserRow): JsonObject {
  const doc = attributeObject();
  doc.userName = row.user_name;
  doc.active = row.active;
  Object.assign(doc, row.attributes);
  if (row.external_id !== null) doc.externalId = row.external_id;
  return doc;
}

export function toUserResource(row: DirectoryUserRow, baseUrl: string): JsonObject {
  const doc = documentOf(row);
  const extensions = Object.keys(doc).filter((k) => k.startsWith('urn:'));
  return {
    schemas: [USER_SCHEMA, ...extensions],
    id: row.id,
    ...doc,
    meta: { resourceType: 'User', created: row.created_at.toISOString(), lastModified: row.updated_at.toISOString(), location: `${baseUrl}/Users/${row.id}` },
  };
}

/** A User as sent (POST, PUT, or the result of a PATCH) → the document the service stores. */
function readDocument(input: unknown): UserDocument {
  if (!isObject(input)) throw scimInvalid('invalidSyntax', 'The body must be a User object.');
  const doc = normalize(input) as JsonObject;
  const userName = doc.userName;
  // RFC 7643 §4.1.1: a unique identifier the provider chooses (an e-mail, `ryan3`, an employee number).
  if (typeof userName !== 'string' || userName.trim() === '') throw scimInvalid('invalidValue', 'userName is required.');
  if (userName.length > MAX_USER_NAME) throw scimInvalid('invalidValue', `userName is at most ${MAX_USER_NAME} characters.`);
  const externalId = doc.externalId;
  if (externalId !== undefined && (typeof externalId !== 'string' || externalId.length > 1024)) throw scimInvalid('invalidValue', 'externalId must be a string.');
  const attributes = attributeObject();
  for (const [key, value] of Object.entries(doc)) if (!NOT_STORED.has(key)) attributes[key] = value;
  if (attributes.name !== undefined && !isObject(attributes.name)) throw scimInvalid('invalidValue', 'name must be an object.');
  if (attributes.displayName !== undefined && typeof attributes.displayName !== 'string') throw scimInvalid('invalidValue', 'displayName must be a string.');
  if (attributes.emails !== undefined && !(Array.isArray(attributes.emails) && attributes.emails.every(isObject))) throw scimInvalid('invalidValue', 'emails must be a list of objects.');
  const enterprise = attributes[ENTERPRISE_SCHEMA];
  if (enterprise !== undefined && !isObject(enterprise)) throw scimInvalid('invalidValue', `${ENTERPRISE_SCHEMA} must be an object.`);
  // RFC 7643 §4.3: manager is complex; Entra sends the manager's id as a bare string.
  if (isObject(enterprise) && typeof enterprise.manager === 'string') {
    const manager = attributeObject();
    manager.value = enterprise.manager;
    enterprise.manager = manager;
  }
  if (JSON.stringify(attributes).length > MAX_ATTRIBUTES_BYTES) throw scimInvalid('invalidValue', `The User's attributes exceed ${MAX_ATTRIBUTES_BYTES} bytes.`);
  return {
    userName,
    active: doc.active === undefined ? undefined : toBoolean(doc.active, 'active'),
    externalId: typeof externalId === 'string' ? externalId : null,
    attributes,
  };
}

export function displayNameOf(attributes: JsonObject): string | null {
  if (typeof attributes.displayName === 'string' && attributes.displayName.trim()) return attributes.displayName.trim().slice(0, 255);
  const name = isObject(attributes.name) ? attributes.name : attributeObject();
  if (typeof name.formatted === 'string' && name.formatted.trim()) return name.formatted.trim().slice(0, 255);
  const parts = [name.givenName, name.familyName].filter((p): p is string => typeof p === 'string' && p.trim() !== '');
  return parts.length > 0 ? parts.join(' ').slice(0, 255) : null;
}

/** Filter attributes of a User → SQL over directory users `d` (RFC 7643 §2.2 case rules). */
function userResolver(compiler: FilterCompiler): Resolver {
  const attrs = compiler.jsonResolver(sql`d.attributes`);
  return (path) => {
    const [head, ...rest] = path;
    const one = rest.length === 0;
    switch (head) {
      case 'userName':
        // Compared as lower(user_name) = lower(value): the unique index serves `eq`.
        if (one) return { kind: 'scalar', sql: sql`d.user_name_normalized`, type: 'string', lowered: true };
        break;
      case 'id':
        if (one) return { kind: 'scalar', sql: sql`d.id`, type: 'string', caseExact: true };
        break;
      case 'externalId':
        if (one) return { kind: 'scalar', sql: sql`d.external_id`, type: 'string', caseExact: true };
        break;
      case 'active':
        if (one) return { kind: 'scalar', sql: sql`d.active`, type: 'boolean' };
        break;
      case 'meta':
        if (rest[0] === 'created' && rest.length === 1) return { kind: 'scalar', sql: sql`d.created_at`, type: 'datetime' };
        if (rest[0] === 'lastModified' && rest.length === 1) return { kind: 'scalar', sql: sql`d.updated_at`, type: 'datetime' };
        break;
      case 'password':
      case 'groups':
        break;
      default:
        return attrs(path);
    }
    throw scimInvalid('invalidFilter', `Users cannot be filtered by ${path.join('.')}.`);
  };
}

export async function listUsers(deps: AppDeps, caller: ScimCaller, query: ListQuery) {
  const compiler = new FilterCompiler();
  const where = query.filter ? compiler.compile(parseFilter(query.filter), userResolver(compiler)) : null;
  const { startIndex, count } = pageWindow(deps, query);
  // The total first: it tells which end of the list a page is nearer (store.listPage).
  const total = await store.countMatching(deps.db, caller.organizationId, { where });
  const rows = await store.listPage(deps.db, caller.organizationId, { where }, startIndex - 1, count, total);
  const resources = rows.map((row) => project(toUserResource(row, caller.baseUrl), query.attributes, query.excludedAttributes));
  return listResponse(total, startIndex, resources);
}

async function requireUser(db: AppDeps['db'], caller: ScimCaller, id: string, forUpdate = false): Promise<DirectoryUserRow> {
  const row = await store.findDirectoryUser(db, caller.organizationId, id, forUpdate);
  if (!row) throw scimNotFound('User', id);
  return row;
}

export async function getUser(deps: AppDeps, caller: ScimCaller, id: string, query: { attributes?: string; excludedAttributes?: string }) {
  return project(toUserResource(await requireUser(deps.db, caller, id), caller.baseUrl), query.attributes, query.excludedAttributes);
}

const linkView = (row: Pick<DirectoryUserRow, 'member_id' | 'link_reason'>) => ({ memberId: row.member_id, linkReason: row.link_reason });

function values(doc: UserDocument, active: boolean) {
  const email = emailToLink(doc.userName, doc.attributes);
  return { userName: doc.userName, externalId: doc.externalId, active, attributes: doc.attributes, email, emailNormalized: email === null ? null : accounts.normalizeEmail(email) };
}

function userNameTaken(err: unknown): never {
  if (isUniqueViolation(err, 'directory_users_org_user_name_key')) throw scimConflict('A User with this userName already exists (compared ignoring case).');
  throw err;
}

/** Every valid User is accepted: the directory user is kept, then linked to a member if it can be. */
export async function createUser(deps: AppDeps, caller: ScimCaller, body: unknown) {
  const doc = readDocument(body);
  const id = newId('directoryUser');
  const now = deps.clock.now();
  try {
    await deps.db.transaction().execute(async (trx) => {
      const row = values(doc, doc.active ?? true);
      await store.insertDirectoryUser(trx, { id, organizationId: caller.organizationId, now, ...row });
      const { outcome, effects } = await link(trx, deps, caller.organizationId, { id, ...row, name: displayNameOf(doc.attributes), now, tokenCreatorMemberId: caller.tokenCreatorMemberId });
      // One entry for the request: the member provisioned or the account taken over are its changes.
      await recordChange(trx, deps.audit, {
        action: 'directory_user.provisioned',
        target: { type: 'directory_user', id },
        changes: { ...created({ userName: doc.userName, externalId: doc.externalId, active: row.active, email: row.email, ...outcome }), ...effects },
      });
    });
  } catch (err) {
    userNameTaken(err);
  }
  return toUserResource(await requireUser(deps.db, caller, id), caller.baseUrl);
}

/**
 * PUT and PATCH both end here, in one transaction: the directory user takes the new document at
 * once (a rename never fails); a linked member follows `active`, and its account the new e-mail
 * where that is allowed; an unlinked one is linked again.
 */
async function saveUser(deps: AppDeps, caller: ScimCaller, id: string, next: (current: DirectoryUserRow) => UserDocument) {
  const now = deps.clock.now();
  const org = caller.organizationId;
  try {
    await deps.db.transaction().execute(async (trx) => {
      const current = await requireUser(trx, caller, id, true);
      const doc = next(current);
      const active = doc.active ?? current.active;
      const linked = current.member_user_id !== null;
      if (linked && !active && current.member_role === 'owner') throw scimInvalid('mutability', 'The organization owner cannot be suspended through SCIM.');
      if (linked && active && !current.active && current.member_id === caller.tokenCreatorMemberId) {
        throw new ScimError(403, undefined, 'A SCIM token cannot restore the member who created it.');
      }
      if (linked && !active && current.active) await accounts.requireTokenMayActOn(trx, org, caller.tokenCreatorMemberId, current.member_id!);
      const row = values(doc, active);
      await store.updateDirectoryUser(trx, org, id, { ...row, now });
      let outcome = linkView(current);
      let effects: Changes = {};
      if (linked) {
        const target: LinkTarget = { id, ...row, name: displayNameOf(doc.attributes), now, tokenCreatorMemberId: caller.tokenCreatorMemberId };
        if (row.emailNormalized !== null && row.emailNormalized !== (current.email === null ? null : accounts.normalizeEmail(current.email))) await followRename(trx, org, current.member_user_id!, target);
        await accounts.setMemberActive(trx, org, current.member_id!, active, now);
      } else {
        ({ outcome, effects } = await link(trx, deps, org, { id, ...row, name: displayNameOf(doc.attributes), now, tokenCreatorMemberId: caller.tokenCreatorMemberId }));
      }
      await recordChange(trx, deps.audit, {
        action: current.active === active ? 'directory_user.updated' : active ? 'directory_user.reactivated' : 'directory_user.suspended',
        target: { type: 'directory_user', id },
        changes: {
          ...changed(
            { userName: current.user_name, active: current.active, externalId: current.external_id, email: current.email, attributes: current.attributes, ...linkView(current) },
            { userName: doc.userName, active, externalId: doc.externalId, email: row.email, attributes: doc.attributes, ...outcome },
          ),
          ...effects,
        },
      });
    });
  } catch (err) {
    userNameTaken(err);
  }
  return toUserResource(await requireUser(deps.db, caller, id), caller.baseUrl);
}

export async function replaceUser(deps: AppDeps, caller: ScimCaller, id: string, body: unknown) {
  return saveUser(deps, caller, id, () => readDocument(body));
}

export async function patchUser(deps: AppDeps, caller: ScimCaller, id: string, operations: PatchOperation[]) {
  return saveUser(deps, caller, id, (current) => readDocument(applyPatch(documentOf(current), operations) as Json));
}

/**
 * The directory user goes; its member, if any, is removed as DELETE /v1/members removes one (the
 * account stays). Another directory user that could not link because this one held the e-mail
 * is linked in the same transaction.
 */
export async function deleteUser(deps: AppDeps, caller: ScimCaller, id: string): Promise<void> {
  const now = deps.clock.now();
  const org = caller.organizationId;
  await deps.db.transaction().execute(async (trx) => {
    const current = await requireUser(trx, caller, id, true);
    const effects: Changes = {};
    if (current.member_user_id !== null) {
      if (current.member_role !== 'owner') await accounts.requireTokenMayActOn(trx, org, caller.tokenCreatorMemberId, current.member_id!);
      if (current.member_role === 'owner' || !(await accounts.removeMember(trx, org, current.member_id!, now))) {
        throw scimInvalid('mutability', 'The organization owner cannot be deleted through SCIM.');
      }
      effects.memberRemoved = { from: null, to: current.member_id };
    }
    await store.deleteDirectoryUser(trx, org, id);
    if (current.member_user_id !== null && current.email !== null) Object.assign(effects, await relinkSharers(trx, deps, org, accounts.normalizeEmail(current.email), now, caller.tokenCreatorMemberId));
    // One entry for the request: the member's removal and a sharer linked in its place are its changes.
    await recordChange(trx, deps.audit, {
      action: 'directory_user.deleted',
      target: { type: 'directory_user', id },
      changes: { ...deleted({ userName: current.user_name, externalId: current.external_id, email: current.email, ...linkView(current) }), ...effects },
    });
  });
}
