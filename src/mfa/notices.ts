import type { Transaction } from 'kysely';
import type { DB } from '../db/schema';
import type { AppDeps } from '../domain/deps';
import { recordChange, type AuditContext } from '../audit';
import { queueNotice } from '../mail/queue';
import * as users from '../users/service';
import { recordAccountChange } from '../account/audit';

/**
 * What a change of second factors leaves behind: an audit entry in each organization the user
 * belongs to (the factor's kind and the change, never a secret or code), and a notice by e-mail so
 * a change the user did not make is seen.
 */
export interface FactorEvent {
  factor: 'totp' | 'passkey' | 'recovery_codes';
  change: 'enrolled' | 'removed' | 'regenerated' | 'used';
}

export async function recordFactorChange(trx: Transaction<DB>, audit: AuditContext | null, userId: string, event: FactorEvent): Promise<void> {
  await recordAccountChange(trx, audit, userId, `member.mfa_${event.change}`, { factor: { from: null, to: event.factor } });
}

export async function recordPolicyChange(trx: Transaction<DB>, audit: AuditContext | null, organizationId: string, from: boolean, to: boolean): Promise<void> {
  await recordChange(trx, audit, { organizationId, action: 'organization.auth_policy_updated', target: { type: 'organization', id: organizationId }, changes: { requireMfa: { from, to } } });
}

const NOTICE: Record<FactorEvent['factor'], Record<string, { title: string; line: string }>> = {
  totp: {
    enrolled: { title: 'An authenticator app was added', line: 'An authenticator app was added to your account as a second factor.' },
    removed: { title: 'Your authenticator app was removed', line: 'The authenticator app was removed from your account.' },
  },
  passkey: {
    enrolled: { title: 'A passkey was added', line: 'A passkey was added to your account.' },
    removed: { title: 'A passkey was removed', line: 'A passkey was removed from your account.' },
  },
  recovery_codes: {
    regenerated: { title: 'New recovery codes', line: 'New recovery codes were made for your account; the old ones no longer work.' },
    used: { title: 'A recovery code was used', line: 'A recovery code was used to sign in to your account. Each code works once; make new ones when few are left.' },
  },
};

export async function notifyFactorChange(deps: AppDeps, trx: Transaction<DB>, userId: string, event: FactorEvent): Promise<void> {
  const user = await users.findUser(trx, userId);
  const notice = NOTICE[event.factor][event.change];
  if (!user || !notice) return;
  await queueNotice(trx, deps, { kind: 'security_notice', to: user.email, title: notice.title, lines: [notice.line] });
}
