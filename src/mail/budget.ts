import type { Kysely } from 'kysely';
import type { DB } from '../db/schema';
import type { Clock } from '../lib/clock';
import * as limits from '../protection/rate-limit';
import type { RateLimitSettings } from '../settings';

/**
 * How much mail one address gets (docs/mail.md#how-much-one-address-gets). Several routes mail an
 * address their caller chooses — sign-up, an e-mail change, invitations and their resends, resets
 * — each limited per caller, but together, from several accounts or organizations, they could
 * still flood one mailbox. So every message counts against its recipient's hourly budget
 * (RATE_LIMIT_MAIL_RECIPIENT, every kind together), counted in the transaction that queues it.
 *
 * Past the budget, what happens depends on what the message is:
 * - a message someone asked to be sent (a link, an invitation) refuses the request that asks for
 *   it: 429 with Retry-After, and its change rolls back with its transaction (`spendRecipientBudget`);
 * - a notice about something already done (a password changed, a factor enrolled, an account
 *   deleted) is not sent and the change stands (`noticeWithinBudget`): refusing it would refuse
 *   the owner's own change, or, for wrong second-factor codes, forget the count the notice reports.
 */
export interface BudgetDeps {
  db: Kysely<DB>;
  clock: Clock;
  settings: { rateLimits: RateLimitSettings };
}

/** The recipient's budget as a limit to spend with others in one statement (`limits.consumeAll`). */
export function recipientBudget(recipient: string): readonly [limits.LimitName, string] {
  return ['mailRecipient', recipient] as const;
}

/** Spends one message of the recipient's budget; past it, 429 (the caller's change rolls back). */
export async function spendRecipientBudget(deps: BudgetDeps, recipient: string): Promise<void> {
  await limits.consume(deps, 'mailRecipient', recipient);
}

/** Spends one message of the recipient's budget for a notice: false past it (leave it unsent). */
export async function noticeWithinBudget(deps: BudgetDeps, recipient: string): Promise<boolean> {
  return limits.countWithin(deps, 'mailRecipient', recipient);
}
