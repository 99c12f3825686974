/**
 * When to try a failed job again: about 5 s, 30 s, 2 min, 10 min, 1 h, 6 h, 12 h after the
 * 1st…7th failure (12 h after any later one), each scaled by a random factor in [0.8, 1.2) so
 * receivers recovering from an outage are not hit by every retry at the same instant. Webhook
 * deliveries use all of it (up to WEBHOOK_MAX_ATTEMPTS), mail its first steps (MAIL_MAX_ATTEMPTS,
 * 6 by default: the last retry about an hour after the fifth failure).
 */
export const RETRY_SCHEDULE_MS = [5_000, 30_000, 120_000, 600_000, 3_600_000, 21_600_000, 43_200_000] as const;

export function retryDelayMs(failedAttempts: number, random: () => number = Math.random): number {
  const base = RETRY_SCHEDULE_MS[Math.min(Math.max(failedAttempts, 1), RETRY_SCHEDULE_MS.length) - 1]!;
  return Math.round(base * (0.8 + 0.4 * random()));
}
