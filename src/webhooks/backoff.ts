/**
 * When to try a failed delivery again: about 5 s, 30 s, 2 min, 10 min, 1 h, 6 h, 12 h after the
 * 1st…7th failure (12 h after any later one), each scaled by a random factor in [0.8, 1.2) so
 * endpoints recovering from an outage are not hit by every retry at the same instant.
 */
export const RETRY_SCHEDULE_MS = [5_000, 30_000, 120_000, 600_000, 3_600_000, 21_600_000, 43_200_000] as const;

export function retryDelayMs(failedAttempts: number, random: () => number = Math.random): number {
  const base = RETRY_SCHEDULE_MS[Math.min(Math.max(failedAttempts, 1), RETRY_SCHEDULE_MS.length) - 1]!;
  return Math.round(base * (0.8 + 0.4 * random()));
}

/** An endpoint whose attempts have all failed for this long is disabled (event webhook.disabled). */
export const DISABLE_AFTER_FAILING_MS = 3 * 24 * 3_600_000;
