import { randomBytes } from 'node:crypto';
import type { components } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import type { Membership, Principal } from '../domain/principal';
import { isUniqueViolation } from '../db/errors';
import { Conflict, NotFound } from '../lib/errors';
import { newId } from '../lib/ids';
import type { PageRequest, Position } from '../lib/pagination';
import { created, deleted, recordChange } from '../audit';
import { guardSsoWrite } from './connections';
import { canonicalDomain } from './domain-name';
import { challengeName, lookupTxt } from './dns';
import * as store from './domain-store';
import type { DomainRow } from './domain-store';

type Schemas = components['schemas'];

const domainNotFound = () => new NotFound('sso_domain_not_found', 'The domain could not be found.');
const domainTaken = (domain: string) => new Conflict('domain_taken', `${domain} is verified by another organization.`);

export function toDomain(row: DomainRow): Schemas['SsoDomain'] {
  return {
    id: row.id,
    domain: row.domain,
    status: row.status,
    verification: { type: 'TXT', name: challengeName(row.domain), value: row.challenge_value },
    createdAt: row.created_at.toISOString(),
    verifiedAt: row.verified_at?.toISOString() ?? null,
  };
}

export async function createDomain(deps: AppDeps, principal: Principal, membership: Membership, input: { domain: string }) {
  await guardSsoWrite(deps, principal, membership);
  const domain = canonicalDomain(input.domain);
  const id = newId('ssoDomain');
  // Published in DNS, so not a secret; random so nobody can publish it before being asked.
  const challengeValue = `cp-domain-verification=${randomBytes(24).toString('base64url')}`;
  try {
    await deps.db.transaction().execute(async (trx) => {
      const owner = await store.verifiedBy(trx, domain);
      if (owner && owner !== membership.organizationId) throw domainTaken(domain);
      await store.insertDomain(trx, { id, organizationId: membership.organizationId, domain, challengeValue, now: deps.clock.now() });
      await recordChange(trx, deps.audit, { action: 'sso_domain.created', target: { type: 'sso_domain', id }, changes: created({ domain, status: 'pending' }) });
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw new Conflict('domain_exists', `The organization has already claimed ${domain}.`);
    throw err;
  }
  return toDomain((await store.findDomain(deps.db, membership.organizationId, id))!);
}

export async function listDomains(deps: AppDeps, membership: Membership, page: PageRequest) {
  return deps.cursors.page<DomainRow & Position, Schemas['SsoDomain']>('sso-domains', page, (after, take) => store.listDomains(deps.db, membership.organizationId, after, take), toDomain);
}

export async function getDomain(deps: AppDeps, membership: Membership, id: string) {
  const row = await store.findDomain(deps.db, membership.organizationId, id);
  if (!row) throw domainNotFound();
  return toDomain(row);
}

/**
 * Looks the challenge up in DNS (outside any transaction: no lock is held during a network call),
 * then marks the domain verified, unless another organization verified it first (409
 * `domain_taken`, also when two verify at once: the unique index decides).
 */
export async function verifyDomain(deps: AppDeps, principal: Principal, membership: Membership, id: string) {
  await guardSsoWrite(deps, principal, membership);
  const current = await store.findDomain(deps.db, membership.organizationId, id);
  if (!current) throw domainNotFound();
  if (current.status === 'verified') return toDomain(current);
  const owner = await store.verifiedBy(deps.db, current.domain);
  if (owner && owner !== membership.organizationId) throw domainTaken(current.domain);
  const name = challengeName(current.domain);
  const lookup = await lookupTxt(deps.settings.dnsServers, name);
  if (!lookup.found || !lookup.values.some((v) => v.trim() === current.challenge_value)) {
    const why = lookup.found ? `no TXT record at ${name} holds the expected value` : `${name}: ${lookup.reason}`;
    throw new Conflict('domain_verification_failed', `The domain could not be verified: ${why}. Publish the TXT record and retry.`);
  }
  try {
    await deps.db.transaction().execute(async (trx) => {
      const locked = await store.lockDomain(trx, membership.organizationId, id);
      if (!locked) throw domainNotFound();
      if (locked.status === 'verified') return;
      await store.markVerified(trx, membership.organizationId, id, deps.clock.now());
      await recordChange(trx, deps.audit, { action: 'sso_domain.verified', target: { type: 'sso_domain', id }, changes: { status: { from: 'pending', to: 'verified' } } });
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw domainTaken(current.domain);
    throw err;
  }
  return toDomain((await store.findDomain(deps.db, membership.organizationId, id))!);
}

export async function deleteDomain(deps: AppDeps, principal: Principal, membership: Membership, id: string): Promise<void> {
  await guardSsoWrite(deps, principal, membership);
  await deps.db.transaction().execute(async (trx) => {
    const current = await store.lockDomain(trx, membership.organizationId, id);
    if (!current) throw domainNotFound();
    await store.deleteDomain(trx, membership.organizationId, id);
    await recordChange(trx, deps.audit, { action: 'sso_domain.deleted', target: { type: 'sso_domain', id }, changes: deleted({ domain: current.domain, status: current.status }) });
  });
}

/** Whether the organization verified the e-mail's domain (SCIM's account-linking rule). */
export { emailDomainVerified } from './domain-store';
