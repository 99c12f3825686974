import type { components } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import { Invalid } from '../lib/errors';
import { planOf, usageOf } from './index';
import * as usage from './usage-store';

type Schemas = components['schemas'];

const HOUR_MS = 3_600_000;
/** Hours carry six decimals (the contract asks for no coarser than 0.0001). */
const hours = (ms: number) => Math.round((ms / HOUR_MS) * 1e6) / 1e6;

function monthBounds(year: number, monthIndex: number): { start: Date; end: Date } {
  return { start: new Date(Date.UTC(year, monthIndex, 1)), end: new Date(Date.UTC(year, monthIndex + 1, 1)) };
}

const MONTH = /^(\d{4})-(0[1-9]|1[0-2])$/;

export function parseMonth(month: string): { start: Date; end: Date } {
  const m = MONTH.exec(month);
  if (!m) throw Invalid.at(['query', 'month'], 'month must look like 2026-11');
  return monthBounds(Number(m[1]), Number(m[2]) - 1);
}

export async function getBilling(deps: AppDeps, membership: Membership): Promise<Schemas['Billing']> {
  const [plan, counts] = await Promise.all([planOf(deps.db, membership.organizationId), usageOf(deps.db, membership.organizationId)]);
  const now = deps.clock.now();
  const { start, end } = monthBounds(now.getUTCFullYear(), now.getUTCMonth());
  return {
    plan: plan.plan as Schemas['Billing']['plan'],
    limits: plan.limits,
    features: plan.features,
    usage: counts,
    period: { start: start.toISOString(), end: end.toISOString() },
  };
}

/**
 * Metered usage of a calendar month (UTC). Online time comes from the interval rollup the
 * heartbeats maintain, clipped to the month and to now (a worker's current interval already runs
 * to its last heartbeat plus WORKER_STALE_AFTER, which has not all happened yet).
 */
export async function getUsage(deps: AppDeps, membership: Membership, month: string | undefined): Promise<Schemas['BillingUsage']> {
  const now = deps.clock.now();
  const label = month ?? now.toISOString().slice(0, 7);
  const { start, end } = parseMonth(label);
  const cap = new Date(Math.min(end.getTime(), now.getTime()));
  const rows = cap > start ? await usage.workerOnlineMs(deps.db, membership.organizationId, start, cap) : [];
  const active = await usage.activeMembers(deps.db, membership.organizationId, start, end);
  const totalMs = rows.reduce((sum, r) => sum + Number(r.online_ms), 0);
  return {
    month: label,
    workerHours: hours(totalMs),
    activeMembers: active,
    perWorker: rows.map((r) => ({ workerId: r.worker_id, name: r.name, onlineHours: hours(Number(r.online_ms)) })),
  };
}
