import { sql, type Kysely } from 'kysely';
import type { DB } from '../db/schema';
import type { Clock } from '../lib/clock';
import { sha256Hex } from '../lib/crypto';
import { RateLimited } from '../lib/errors';
import { metrics } from '../observability/metrics';
import type { RateLimitRule, RateLimitSettings } from '../settings';

/**
 * Fixed-window rate limiting with its state in Postgres, so every service process counts against
 * the same window. One table, `rate_limits(key, points, expires_at)`, and one atomic statement per
 * hit (INSERT … ON CONFLICT DO UPDATE … RETURNING): concurrent hits from several processes never
 * lose a count, and the same code runs on the server database and on embedded PGlite.
 *
 * Subjects (e-mails, IPs, user ids) are stored hashed: the table is not a list of who tried what.
 */
export type LimitName = keyof RateLimitSettings;

interface LimiterDeps {
  db: Kysely<DB>;
  clock: Clock;
  settings: { rateLimits: RateLimitSettings };
}

/** How often (1 in N hits) a hit also deletes expired rows, so the table stays small without a job. */
const SWEEP_EVERY = 200;

function keyOf(name: LimitName, subject: string): string {
  return `${name}:${sha256Hex(subject.trim().toLowerCase()).slice(0, 40)}`;
}

function retryAfterSeconds(expiresAt: Date, now: Date): number {
  return Math.max(1, Math.ceil((expiresAt.getTime() - now.getTime()) / 1000));
}

function limited(name: LimitName, rule: RateLimitRule, expiresAt: Date, now: Date): RateLimited {
  metrics?.rateLimitRejections.inc({ limit: name });
  const seconds = retryAfterSeconds(expiresAt, now);
  return new RateLimited(seconds, `Too many attempts; retry in ${seconds} s.`);
}

/** Adds one point to the key's current window (opening a new window when the old one is over). */
async function hit(deps: LimiterDeps, name: LimitName, subject: string, rule: RateLimitRule): Promise<{ points: number; expiresAt: Date }> {
  const now = deps.clock.now();
  const row = await deps.db
    .insertInto('rate_limits')
    .values({ key: keyOf(name, subject), points: 1, expires_at: new Date(now.getTime() + rule.windowMs) })
    .onConflict((oc) =>
      oc.column('key').doUpdateSet({
        points: sql<number>`CASE WHEN rate_limits.expires_at <= ${now} THEN 1 ELSE rate_limits.points + 1 END`,
        expires_at: sql<Date>`CASE WHEN rate_limits.expires_at <= ${now} THEN excluded.expires_at ELSE rate_limits.expires_at END`,
      }),
    )
    .returning(['points', 'expires_at'])
    .executeTakeFirstOrThrow();
  if (Math.random() * SWEEP_EVERY < 1) await sweep(deps.db, now);
  return { points: row.points, expiresAt: new Date(row.expires_at) };
}

async function sweep(db: Kysely<DB>, now: Date): Promise<void> {
  await db
    .deleteFrom('rate_limits')
    .where('key', 'in', (eb) => eb.selectFrom('rate_limits').select('key').where('expires_at', '<', now).limit(500))
    .execute();
}

/**
 * Counts this attempt and refuses it (429 with Retry-After) when it goes past the limit. For
 * limits on every attempt: sign-up per IP, bootstrap per IP, invitation accepts.
 */
export async function consume(deps: LimiterDeps, name: LimitName, subject: string): Promise<void> {
  const rule = deps.settings.rateLimits[name];
  if (!rule || !subject) return;
  const { points, expiresAt } = await hit(deps, name, subject, rule);
  if (points > rule.points) throw limited(name, rule, expiresAt, deps.clock.now());
}

/**
 * `consume` for each limit in turn, in one call: the first past its limit refuses, and the ones
 * after it are not counted (a password reset's per-address, then per-IP limit).
 */
export async function consumeInOrder(deps: LimiterDeps, checks: readonly (readonly [LimitName, string])[]): Promise<void> {
  for (const [name, subject] of checks) await consume(deps, name, subject);
}

/**
 * `consume` for several limits at once: every key counted in one statement (a multi-row upsert),
 * then the first of `checks` (in order) past its limit refuses with 429. For a request that several
 * limits guard together (an invitation: its organization's and its recipient's), at the cost of
 * one round trip instead of one per limit.
 */
export async function consumeAll(deps: LimiterDeps, checks: readonly (readonly [LimitName, string])[]): Promise<void> {
  const active = checks.filter(([name, subject]) => deps.settings.rateLimits[name] && subject).map(([name, subject]) => ({ name, key: keyOf(name, subject), rule: deps.settings.rateLimits[name]! }));
  const unique = active.filter((a, i) => active.findIndex((b) => b.key === a.key) === i);
  if (unique.length === 0) return;
  const now = deps.clock.now();
  const rows = await deps.db
    .insertInto('rate_limits')
    .values(unique.map((a) => ({ key: a.key, points: 1, expires_at: new Date(now.getTime() + a.rule.windowMs) })))
    .onConflict((oc) =>
      oc.column('key').doUpdateSet({
        points: sql<number>`CASE WHEN rate_limits.expires_at <= ${now} THEN 1 ELSE rate_limits.points + 1 END`,
        expires_at: sql<Date>`CASE WHEN rate_limits.expires_at <= ${now} THEN excluded.expires_at ELSE rate_limits.expires_at END`,
      }),
    )
    .returning(['key', 'points', 'expires_at'])
    .execute();
  if (Math.random() * SWEEP_EVERY < 1) await sweep(deps.db, now);
  for (const { name, key, rule } of unique) {
    const row = rows.find((r) => r.key === key);
    if (row && row.points > rule.points) throw limited(name, rule, new Date(row.expires_at), now);
  }
}

/**
 * Counts this attempt like `consume` and says whether it is within the limit, refusing nothing:
 * for a caller that goes on without what the limit guards (a notice left unsent).
 */
export async function countWithin(deps: LimiterDeps, name: LimitName, subject: string): Promise<boolean> {
  const rule = deps.settings.rateLimits[name];
  if (!rule || !subject) return true;
  const { points } = await hit(deps, name, subject, rule);
  return points <= rule.points;
}

/** Refuses (429) when the key has already used up its window; counts nothing. */
export async function assertNotLimited(deps: LimiterDeps, name: LimitName, subject: string): Promise<void> {
  await assertNoneLimited(deps, [[name, subject]]);
}

/**
 * Refuses (429) for the first of `checks` (in order) whose key has used up its window, reading
 * every key in one statement; counts nothing. Returns the names whose key has a live window, so a
 * caller clears only what holds failures.
 */
export async function assertNoneLimited(deps: LimiterDeps, checks: readonly (readonly [LimitName, string])[]): Promise<LimitName[]> {
  const active = checks.filter(([name, subject]) => deps.settings.rateLimits[name] && subject).map(([name, subject]) => ({ name, key: keyOf(name, subject) }));
  if (active.length === 0) return [];
  const now = deps.clock.now();
  const rows = await deps.db
    .selectFrom('rate_limits')
    .select(['key', 'points', 'expires_at'])
    .where('key', 'in', active.map((a) => a.key))
    .where('expires_at', '>', now)
    .execute();
  const live: LimitName[] = [];
  for (const { name, key } of active) {
    const row = rows.find((r) => r.key === key);
    if (!row) continue;
    const rule = deps.settings.rateLimits[name]!;
    if (row.points >= rule.points) throw limited(name, rule, new Date(row.expires_at), now);
    live.push(name);
  }
  return live;
}

/**
 * Counts a failure (wrong password) without refusing this request; the next one is refused. True
 * when this failure is the one that used the window up (once per window: a caller tells someone).
 */
export async function recordFailure(deps: LimiterDeps, name: LimitName, subject: string): Promise<boolean> {
  const rule = deps.settings.rateLimits[name];
  if (!rule || !subject) return false;
  const { points } = await hit(deps, name, subject, rule);
  return points === rule.points;
}

/** Forgets a key's window (a successful sign-in clears that e-mail's failures). */
export async function clear(deps: LimiterDeps, name: LimitName, subject: string): Promise<void> {
  if (!deps.settings.rateLimits[name] || !subject) return;
  await deps.db.deleteFrom('rate_limits').where('key', '=', keyOf(name, subject)).execute();
}

/**
 * The guard for POST /v1/invitations/accept: call it first in the accept service, outside any
 * transaction. Counts every attempt per user and per IP (tokens cannot be guessed, but each
 * attempt costs a lookup and a transaction).
 */
export async function guardInvitationAccept(deps: LimiterDeps, caller: { userId: string; ip?: string }): Promise<void> {
  await consume(deps, 'invitationAcceptUser', caller.userId);
  if (caller.ip) await consume(deps, 'invitationAcceptIp', caller.ip);
}
