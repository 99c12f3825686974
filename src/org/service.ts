import type { Transaction } from 'kysely';
import type { DB } from '../db/schema';
import type { AppDeps } from '../domain/deps';
import type { Membership, Principal } from '../domain/principal';
import { Invalid, NotFound } from '../lib/errors';
import { plainName } from '../lib/names';
import { newId } from '../lib/ids';
import { setSessionOrganization } from '../users/service';
import { principalFromSessionWith } from '../principal/session';
import { principalFromAccessTokenWith } from '../principal/access-token';
import { RequestPreload } from '../principal/preload';
import * as store from './store';
import { addMember, findMember } from '../members/memberships';
import { toMember } from '../members/mappers';
import { toOrganization } from './mappers';
import { jsonText } from '../lib/json-text';
import type { components } from '../../generated/api';
import { provisionOrganization } from './provisioning';
import { changed, created, recordChange, type AuditContext } from '../audit';
import { insertBuiltInRoles } from '../roles/service';

export type Plan = 'free' | 'team' | 'enterprise';
type Schemas = components['schemas'];

const orgNotFound = () => new NotFound('organization_not_found', 'The organization could not be found.');

/**
 * Creates an organization with its owner and its provisioned defaults; callers pass their
 * transaction so bootstrap can add the user in the same one, and the audit context it is
 * recorded under (the request's, or the system's for a seed).
 */
/** An organization's name as stored (src/lib/names.ts); one of nothing but hidden characters is refused at `field`. */
function organizationName(name: string, field: string[]): string {
  const plain = plainName(name);
  if (!plain) throw Invalid.at(field, 'must contain visible characters');
  return plain;
}

export async function createOrganizationIn(trx: Transaction<DB>, audit: AuditContext | null, input: { name: string; plan: Plan; ownerUserId: string; now: Date; nameField?: string[] }) {
  const name = organizationName(input.name, input.nameField ?? ['body', 'name']);
  const organization = await store.insertOrganization(trx, { id: newId('organization'), name, plan: input.plan, now: input.now });
  await insertBuiltInRoles(trx, organization.id, input.now);
  const memberId = await addMember(trx, { organizationId: organization.id, userId: input.ownerUserId, role: 'owner', now: input.now });
  await provisionOrganization(trx, { organizationId: organization.id, ownerMemberId: memberId, now: input.now });
  const owner = await store.findOwner(trx, organization.id);
  const member = await findMember(trx, organization.id, memberId);
  if (!member) throw new Error('owner membership vanished inside its own transaction');
  await recordChange(trx, audit, {
    organizationId: organization.id,
    actorMemberId: memberId,
    action: 'organization.created',
    target: { type: 'organization', id: organization.id },
    changes: created({ name, plan: input.plan, ownerMemberId: memberId }),
  });
  return { organization: toOrganization(organization, owner), member: toMember(member) };
}

export async function createOrganization(deps: AppDeps, input: { name: string; userId: string; sessionId: string | null }) {
  return deps.db.transaction().execute(async (trx) => {
    const created = await createOrganizationIn(trx, deps.audit, { name: input.name, plan: 'free', ownerUserId: input.userId, now: deps.clock.now() });
    if (input.sessionId) await setSessionOrganization(trx, input.sessionId, created.organization.id);
    return created.organization;
  });
}

type OrganizationContext = Schemas['OrganizationContext'];

/** The answer as Postgres wrote it (see CONTEXT_COLUMN in ./store.ts), sent as it is. */
const toContext = (json: string): OrganizationContext => jsonText<OrganizationContext>(json);

/** Contexts read together with the session that asked for them (src/principal/preload.ts). */
const prefetched = new RequestPreload<OrganizationContext>();

/**
 * GET /v1/org's session check and its data in one round trip (registered as its session loader in
 * src/server/registry.ts): the same principal as principalFromSession, plus the context for
 * getOrganizationContext to use.
 */
export async function loadSessionWithOrganization(db: AppDeps['db'], token: string, now: Date): Promise<Principal | null> {
  const found = await principalFromSessionWith(db, token, now, store.organizationContextPreload);
  if (!found) return null;
  const { principal, preloaded } = found;
  if (principal.membership && preloaded) prefetched.keep(principal.membership, toContext(preloaded));
  return principal;
}

/**
 * The same for an OAuth access token (registered as its access-token loader): the token's one
 * statement reads the context too. Throws the token's 401 as the plain check does.
 */
export async function loadAccessTokenWithOrganization(db: AppDeps['db'], token: string, now: Date, publicBaseUrl: string): Promise<Principal | null> {
  const found = await principalFromAccessTokenWith(db, token, now, publicBaseUrl, store.organizationContextTokenPreload);
  if (!found) return null;
  const { principal, preloaded } = found;
  if (principal.membership && preloaded) prefetched.keep(principal.membership, toContext(preloaded));
  return principal;
}

/** One round trip (none when the session or access-token loader already read it); 404 when the membership is gone. */
export async function getOrganizationContext(deps: AppDeps, membership: Membership) {
  const ready = prefetched.take(membership);
  if (ready) return ready;
  const json = await store.organizationContext(deps.db, membership.organizationId, membership.memberId);
  if (!json) throw orgNotFound();
  return toContext(json);
}

export async function renameOrganization(deps: AppDeps, membership: Membership, newName: string) {
  const { organizationId } = membership;
  const name = organizationName(newName, ['body', 'name']);
  return deps.db.transaction().execute(async (trx) => {
    const before = await store.findOrganization(trx, organizationId);
    const row = before ? await store.renameOrganization(trx, organizationId, name, deps.clock.now()) : undefined;
    if (!before || !row) throw orgNotFound();
    await recordChange(trx, deps.audit, { action: 'organization.updated', target: { type: 'organization', id: organizationId }, changes: changed({ name: before.name }, { name }) });
    return toOrganization(row, await store.findOwner(trx, organizationId));
  });
}

/**
 * The organization row's other writers go through here, inside their own transaction and audit
 * entry: the platform admin's plan change (src/admin) and SSO enforcement (src/sso/policy.ts).
 */
export const setOrganizationPlan = store.setPlan;
export const lockSsoEnforced = store.lockSsoEnforced;
export const setSsoEnforced = store.setSsoEnforced;
