import type { AppDeps } from '../domain/deps';
import { queueNotice } from '../mail/queue';
import * as limits from '../protection/rate-limit';
import type { UserRow } from '../users/service';

/**
 * Second-factor guessing (docs/second-factors.md). A right password clears the e-mail's sign-in
 * failures before it opens a challenge, and five wrong answers end only that challenge, so the
 * sign-in limits alone would let whoever knows the password guess codes without end. Wrong answers
 * are therefore also counted per account, across challenges, in a window of their own
 * (RATE_LIMIT_SECOND_FACTOR_USER) that nothing but time clears; past it every answer is 429. The
 * failure that uses the window up mails the account's owner (once per window), in the same
 * transaction as the count: whoever is guessing knows the password.
 */
export const GUESSING_LIMIT = 'secondFactorUser' as const;

/** The check `verify` runs with the sign-in limits before it looks at an answer. */
export function guessingCheck(userId: string): readonly [typeof GUESSING_LIMIT, string] {
  return [GUESSING_LIMIT, userId];
}

/** Counts one wrong answer against the account; the one that uses the window up mails the owner. */
export async function countWrongAnswer(deps: AppDeps, user: Pick<UserRow, 'id' | 'email' | 'name'>): Promise<void> {
  const rule = deps.settings.rateLimits[GUESSING_LIMIT];
  if (!rule) return;
  await deps.db.transaction().execute(async (trx) => {
    if (!(await limits.recordFailure({ ...deps, db: trx }, GUESSING_LIMIT, user.id))) return;
    const window = describeWindow(rule.windowMs);
    await queueNotice(trx, deps, {
      kind: 'security_notice',
      to: user.email,
      title: 'Too many wrong second-factor codes',
      lines: [
        `Someone entered your password correctly and then ${rule.points} wrong second-factor codes within ${window}. Signing in to your account with a second factor is paused until ${window} after the first of them.`,
        'Whoever it was knows your password: if it was not you, change your password at once (or reset it from the sign-in page), then sign out your other sessions.',
      ],
    });
  });
}

/** `15 minutes`, `1 hour`, `90 seconds`: a window as a person reads it. */
function describeWindow(ms: number): string {
  const unit = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  if (ms % 3_600_000 === 0) return unit(ms / 3_600_000, 'hour');
  if (ms % 60_000 === 0) return unit(ms / 60_000, 'minute');
  return unit(Math.ceil(ms / 1000), 'second');
}
