import type { Db } from '../db/schema';
import { before, type Position, positioned } from '../lib/pagination';
import { emailDomainOf } from './domain-name';
import type { SsoDomainsTable } from './tables';

export type DomainRow = Omit<SsoDomainsTable, 'created_at' | 'verified_at'> & { created_at: Date; verified_at: Date | null };

const COLUMNS = ['d.id', 'd.organization_id', 'd.domain', 'd.status', 'd.challenge_value', 'd.created_at', 'd.verified_at'] as const;

function domains(db: Db, organizationId: string) {
  return db.selectFrom('sso_domains as d').select(COLUMNS).where('d.organization_id', '=', organizationId);
}

export async function insertDomain(db: Db, row: { id: string; organizationId: string; domain: string; challengeValue: string; now: Date }): Promise<void> {
  await db
    .insertInto('sso_domains')
    .values({ id: row.id, organization_id: row.organizationId, domain: row.domain, status: 'pending', challenge_value: row.challengeValue, created_at: row.now, verified_at: null })
    .execute();
}

export async function findDomain(db: Db, organizationId: string, id: string): Promise<DomainRow | undefined> {
  return (await domains(db, organizationId).where('d.id', '=', id).executeTakeFirst()) as DomainRow | undefined;
}

export async function lockDomain(db: Db, organizationId: string, id: string): Promise<DomainRow | undefined> {
  return (await domains(db, organizationId).where('d.id', '=', id).forUpdate().executeTakeFirst()) as DomainRow | undefined;
}

export async function listDomains(db: Db, organizationId: string, after: Position | null, take: number): Promise<(DomainRow & Position)[]> {
  let q = domains(db, organizationId);
  if (after) q = q.where(before('d.created_at', 'd.id', after));
  const rows = (await q.orderBy('d.created_at', 'desc').orderBy('d.id', 'desc').limit(take).execute()) as DomainRow[];
  return positioned(rows);
}

export async function markVerified(db: Db, organizationId: string, id: string, now: Date): Promise<void> {
  await db.updateTable('sso_domains').set({ status: 'verified', verified_at: now }).where('organization_id', '=', organizationId).where('id', '=', id).execute();
}

export async function deleteDomain(db: Db, organizationId: string, id: string): Promise<boolean> {
  const result = await db.deleteFrom('sso_domains').where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** The organization that verified `domain`, if any (at most one: unique partial index). */
export async function verifiedBy(db: Db, domain: string): Promise<string | undefined> {
  const row = await db.selectFrom('sso_domains').select('organization_id').where('domain', '=', domain).where('status', '=', 'verified').executeTakeFirst();
  return row?.organization_id;
}

/** Whether the e-mail's domain is one the organization verified (exact domain match). */
export async function emailDomainVerified(db: Db, organizationId: string, email: string): Promise<boolean> {
  return (await verifiedBy(db, emailDomainOf(email))) === organizationId;
}

/** The organization that verified the e-mail's domain (sign-in by e-mail, enforcement). */
export async function organizationOfVerifiedEmail(db: Db, email: string): Promise<string | undefined> {
  return verifiedBy(db, emailDomainOf(email));
}
