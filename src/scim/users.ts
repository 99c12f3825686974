import { sql } from 'kysely';
import type { AppDeps } from '../http/types';
import { newId } from '../lib/ids';
import { CodedError } from '../lib/errors';
import { isUniqueViolation } from '../db/errors';
import { addMember, saveDirectoryState } from '../members/memberships';
import { removeFromOrganization } from '../members/service';
import * as users from '../users/service';
import { enforceLimit } from '../plans';
import { changed, created, recordChange } from '../audit';
import { ENTERPRISE_SCHEMA, USER_SCHEMA, attributeObject, isObject, normalize, project, toBoolean, type Json, type JsonObject } from './attributes';
import { scimConflict, scimInvalid, scimNotFound } from './errors';
import { FilterCompiler, parseFilter, type Resolver } from './filter';
import { applyPatch, type PatchOperation } from './patch';
import { emailDomainVerified } from './domains';
import { listResponse, pageWindow, type ListQuery, type ScimCaller } from './common';
import * as store from './user-store';
import type { ScimMemberRow } from './user-store';

/** Attributes that are columns or never stored; everything else is kept as the IdP sent it. */
const NOT_STORED = new Set(['id', 'meta', 'schemas', 'password', 'groups', 'userName', 'active', 'externalId']);
const MAX_ATTRIBUTES_BYTES = 64 * 1024;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** The writable part of a User: `userName`, `active`, `externalId` and the stored attributes. */
interface UserDocument {
  userName: string;
  active: boolean | undefined;
  externalId: string | null;
  attributes: JsonObject;
}

/**
 * A member's User document. A member SCIM has written returns exactly what was stored (a full
 * replace that drops an attribute drops it); a member SCIM never touched shows the account's
 * e-mail and name, so an identity provider can match and adopt existing members.
 */
function documentOf(row: ScimMemberRow): JsonObject {
  const doc: JsonObject = { userName: row.email, active: row.suspended_at === null, ...(row.scim_attributes ?? {}) };
  if (row.external_id !== null) doc.externalId = row.external_id;
  if (row.scim_attributes === null) {
    doc.emails = [{ value: row.email, primary: true, type: 'work' }];
    if (row.user_name) doc.displayName = row.user_name;
  }
  return doc;
}

export function toUserResource(row: ScimMemberRow, baseUrl: string): JsonObject {
  const doc = documentOf(row);
  const extensions = Object.keys(doc).filter((k) => k.startsWith('urn:'));
  return {
    schemas: [USER_SCHEMA, ...extensions],
    id: row.id,
    ...doc,
    meta: {
      resourceType: 'User',
      created: row.created_at.toISOString(),
      lastModified: (row.updated_at ?? row.created_at).toISOString(),
      location: `${baseUrl}/Users/${row.id}`,
    },
  };
}

/** A User as sent (POST, PUT, or the result of a PATCH) → the document the service stores. */
function readDocument(input: unknown): UserDocument {
  if (!isObject(input)) throw scimInvalid('invalidSyntax', 'The body must be a User object.');
  const doc = normalize(input) as JsonObject;
  const userName = doc.userName;
  if (typeof userName !== 'string' || userName.trim() === '') throw scimInvalid('invalidValue', 'userName is required.');
  if (userName.length > 320 || !EMAIL.test(userName.trim())) throw scimInvalid('invalidValue', 'userName must be the user\'s e-mail address.');
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
  if (isObject(enterprise) && typeof enterprise.manager === 'string') enterprise.manager = { value: enterprise.manager };
  if (JSON.stringify(attributes).length > MAX_ATTRIBUTES_BYTES) throw scimInvalid('invalidValue', `The User's attributes exceed ${MAX_ATTRIBUTES_BYTES} bytes.`);
  return {
    userName: userName.trim(),
    active: doc.active === undefined ? undefined : toBoolean(doc.active, 'active'),
    externalId: typeof externalId === 'string' ? externalId : null,
    attributes,
  };
}

function displayNameOf(attributes: JsonObject): string | null {
  if (typeof attributes.displayName === 'string' && attributes.displayName.trim()) return attributes.displayName.trim().slice(0, 255);
  const name = isObject(attributes.name) ? attributes.name : {};
  if (typeof name.formatted === 'string' && name.formatted.trim()) return name.formatted.trim().slice(0, 255);
  const parts = [name.givenName, name.familyName].filter((p): p is string => typeof p === 'string' && p.trim() !== '');
  return parts.length > 0 ? parts.join(' ').slice(0, 255) : null;
}

/** Filter attributes of a User → SQL over members `m` and users `u`. */
function userResolver(compiler: FilterCompiler, uses: { user: boolean }): Resolver {
  const attrs = compiler.jsonResolver(sql`m.scim_attributes`);
  return (path) => {
    const [head, ...rest] = path;
    const one = rest.length === 0;
    switch (head) {
      case 'userName':
        if (!one) break;
        uses.user = true;
        return { kind: 'scalar', sql: sql`u.email_normalized`, type: 'string', lowered: true };
      case 'id':
        if (!one) break;
        return { kind: 'scalar', sql: sql`m.id`, type: 'string', caseExact: true };
      case 'externalId':
        if (!one) break;
        return { kind: 'scalar', sql: sql`m.external_id`, type: 'string', caseExact: true };
      case 'active':
        if (!one) break;
        return { kind: 'scalar', sql: sql`(m.suspended_at IS NULL)`, type: 'boolean' };
      case 'displayName':
        if (!one) break;
        uses.user = true;
        return { kind: 'scalar', sql: sql`(CASE WHEN m.scim_attributes IS NULL THEN u.name ELSE m.scim_attributes ->> 'displayName' END)`, type: 'string' };
      case 'meta':
        if (rest[0] === 'created' && rest.length === 1) return { kind: 'scalar', sql: sql`m.created_at`, type: 'datetime' };
        if (rest[0] === 'lastModified' && rest.length === 1) return { kind: 'scalar', sql: sql`coalesce(m.updated_at, m.created_at)`, type: 'datetime' };
        break;
      case 'emails': {
        uses.user = true;
        const alias = compiler.alias();
        return { kind: 'multi', from: sql`jsonb_array_elements(${store.EMAILS_SQL}) AS ${sql.raw(alias)}(v)`, element: compiler.jsonResolver(sql.raw(`${alias}.v`)), rest, defaultSub: ['value'] };
      }
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
  const uses = { user: false };
  const where = query.filter ? compiler.compile(parseFilter(query.filter), userResolver(compiler, uses)) : null;
  const search = { where, needsUser: uses.user };
  const { startIndex, count } = pageWindow(deps, query);
  const [total, rows] = await Promise.all([
    store.countMembers(deps.db, caller.organizationId, search),
    store.listMembers(deps.db, caller.organizationId, search, startIndex - 1, count),
  ]);
  const resources = rows.map((row) => project(toUserResource(row, caller.baseUrl), query.attributes, query.excludedAttributes));
  return listResponse(total, startIndex, resources);
}

async function requireMember(deps: AppDeps, caller: ScimCaller, id: string, forUpdate = false, db = deps.db): Promise<ScimMemberRow> {
  const row = await store.findMember(db, caller.organizationId, id, forUpdate);
  if (!row) throw scimNotFound('User', id);
  return row;
}

export async function getUser(deps: AppDeps, caller: ScimCaller, id: string, query: { attributes?: string; excludedAttributes?: string }) {
  const row = await requireMember(deps, caller, id);
  return project(toUserResource(row, caller.baseUrl), query.attributes, query.excludedAttributes);
}

export async function createUser(deps: AppDeps, caller: ScimCaller, body: unknown) {
  const doc = readDocument(body);
  const now = deps.clock.now();
  const memberId = newId('member');
  try {
    await deps.db.transaction().execute(async (trx) => {
      if (await store.findMemberByEmail(trx, caller.organizationId, doc.userName)) throw scimConflict('A member with this userName already exists.');
      let userId = (await users.findUserByEmail(trx, doc.userName))?.id;
      const linkable = async (id: string) => (await emailDomainVerified(trx, caller.organizationId, doc.userName)) || (await store.provisionedHereBefore(trx, id, caller.organizationId));
      if (userId && !(await linkable(userId))) {
        throw scimConflict('An account with this e-mail already exists, and its domain is not verified by the organization, so it cannot be linked.');
      }
      if (!userId) userId = (await users.createUser(trx, { email: doc.userName, name: displayNameOf(doc.attributes), passwordHash: null, now })).id;
      // Seat limit: counted with the organization row locked, in the transaction that inserts.
      await enforceLimit(trx, deps.settings, caller.organizationId, 'members');
      await addMember(trx, {
        id: memberId,
        organizationId: caller.organizationId,
        userId,
        role: 'member',
        directory: { externalId: doc.externalId, attributes: doc.attributes },
        suspended: doc.active === false,
        now,
      });
      await recordChange(trx, deps.audit, {
        action: 'member.provisioned',
        target: { type: 'member', id: memberId },
        changes: created({ userName: doc.userName, externalId: doc.externalId, active: doc.active !== false, role: 'member' }),
      });
    });
  } catch (err) {
    // Two creates racing for the same e-mail: the unique indexes decide, the loser gets 409.
    if (isUniqueViolation(err)) throw scimConflict('A member with this userName already exists.');
    throw err;
  }
  return toUserResource(await requireMember(deps, caller, memberId), caller.baseUrl);
}

/** PUT and PATCH both end here: the new document replaces the member's SCIM state in one transaction. */
async function saveUser(deps: AppDeps, caller: ScimCaller, id: string, next: (current: ScimMemberRow) => UserDocument) {
  const now = deps.clock.now();
  try {
    await deps.db.transaction().execute(async (trx) => {
      const current = await requireMember(deps, caller, id, true, trx);
      const doc = next(current);
      if (doc.userName.toLowerCase() !== current.email.toLowerCase()) {
        const allowed = (await emailDomainVerified(trx, caller.organizationId, doc.userName)) && (await store.otherMemberships(trx, current.user_id, caller.organizationId)) === 0;
        if (!allowed) {
          throw scimInvalid('mutability', 'userName (the e-mail) can change only to an address in a domain the organization verified, for a user in no other organization.');
        }
        await users.changeEmail(trx, current.user_id, doc.userName, now);
      }
      const active = doc.active ?? current.suspended_at === null;
      if (!active && current.role === 'owner') throw scimInvalid('mutability', 'The organization owner cannot be suspended through SCIM.');
      // Suspension takes effect at once (sessions stop reaching the organization, API keys are revoked).
      await saveDirectoryState(trx, caller.organizationId, id, { externalId: doc.externalId, attributes: doc.attributes, active, wasSuspendedAt: current.suspended_at, now });
      const wasActive = current.suspended_at === null;
      await recordChange(trx, deps.audit, {
        action: wasActive === active ? 'member.updated' : active ? 'member.reactivated' : 'member.suspended',
        target: { type: 'member', id },
        changes: changed(
          { userName: current.email, active: wasActive, externalId: current.external_id, attributes: current.scim_attributes ?? {} },
          { userName: doc.userName, active, externalId: doc.externalId, attributes: doc.attributes },
        ),
      });
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw scimConflict('Another account already uses this userName.');
    throw err;
  }
  return toUserResource(await requireMember(deps, caller, id), caller.baseUrl);
}

export async function replaceUser(deps: AppDeps, caller: ScimCaller, id: string, body: unknown) {
  return saveUser(deps, caller, id, () => readDocument(body));
}

export async function patchUser(deps: AppDeps, caller: ScimCaller, id: string, operations: PatchOperation[]) {
  return saveUser(deps, caller, id, (current) => readDocument(applyPatch(documentOf(current), operations) as Json));
}

export async function deleteUser(deps: AppDeps, caller: ScimCaller, id: string): Promise<void> {
  await requireMember(deps, caller, id);
  try {
    await removeFromOrganization(deps, caller.organizationId, id);
  } catch (err) {
    if (err instanceof CodedError && err.code === 'owner_cannot_be_removed') throw scimInvalid('mutability', 'The organization owner cannot be deleted through SCIM.');
    if (err instanceof CodedError && err.status === 404) throw scimNotFound('User', id);
    throw err;
  }
}


