import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { BenchContext } from '../lib/context';
import { measureRounds, type LoadOptions, type Measurement } from '../lib/load';
import type { Target } from '../lib/procs';
import { check, type ScenarioResult } from '../lib/report';
import { seedOrganization } from '../seed/org';

const ROUNDS = 2;
const SIGN_UP_CONNECTIONS = 2;
const INVITE_CONNECTIONS = 4;

/**
 * Scenario 14: writes that queue a message in their own transaction (docs/mail.md#queueing-and-sending).
 * `POST /v1/auth/sign-up` (argon2 at the shipped cost, the account, its session and, where the
 * build verifies addresses, the verification message) and `POST /v1/invitations` (the invitation,
 * its audit entry and the invitation message, sealed), on one service process that queues but
 * does not send (MAIL_DISPATCH=off, as when other processes send). The p50 of each is the figure. With
 * `--previous=<checkout>` (a build from before mail was queued) the earlier build takes the same
 * requests on the same data in the same alternating rounds: p50 ≤ 1.2× its own.
 */
export async function scenarioMailQueued(ctx: BenchContext): Promise<ScenarioResult> {
  const db = ctx.scratch.database.db;
  const org = await seedOrganization(db, { name: 'Mail Bench', members: 10, teams: 0 });
  const result: ScenarioResult = {
    id: '14',
    title: 'Mail queued: POST /v1/auth/sign-up and POST /v1/invitations',
    setup: [
      `sign-up at ${SIGN_UP_CONNECTIONS} connections, invitation-create at ${INVITE_CONNECTIONS} (one admin session, unique addresses); warmed ${ctx.warmup} s, measured ${ctx.duration} s in ${ROUNDS} alternating rounds`,
      'one service process with MAIL_DISPATCH=off: each message is queued in the request\'s transaction and left for another process to send (none runs here); sign-up per-IP limit off for the load',
    ],
    rows: [],
    checks: [],
    notes: [],
  };
  const targets: Target[] = [];
  try {
    // The figure is the request with its message queued: neither process sends during the rounds
    // (MAIL_DISPATCH=off), so the new build's sign-up (which now queues a verification message)
    // is not also charged the earlier one's missing send on the same two cores. Sending is in
    // scenario 13's invitation pair.
    // The organization's invitation budget (100 an hour by default) is off for the load, like the sign-up limit.
    const env = { RATE_LIMIT_SIGN_UP_IP: 'off', RATE_LIMIT_INVITATION_ORG: 'off', MAIL_DISPATCH: 'off', MAIL_DIR: path.join(ctx.logDir, 's14-mail') };
    const service = await ctx.startService('s14-service', env);
    targets.push(service);
    const previous = ctx.startPrevious ? await ctx.startPrevious('s14-previous', env) : null;
    if (previous) targets.push(previous);
    const tag = randomBytes(3).toString('hex');
    let n = 0;
    const signUp: LoadOptions = {
      label: 'POST /v1/auth/sign-up',
      url: service.url,
      connections: SIGN_UP_CONNECTIONS,
      duration: ctx.duration,
      warmup: ctx.warmup,
      targets: [service],
      requests: [
        {
          method: 'POST',
          path: '/v1/auth/sign-up',
          headers: { 'content-type': 'application/json' },
          setupRequest: (req: object) => ({ ...req, body: JSON.stringify({ email: `new-${tag}-${n++}@bench.test`, password: 'bench sign-up passphrase 41c9', name: 'New user' }) }),
        },
      ],
    };
    const invite: LoadOptions = {
      label: 'POST /v1/invitations',
      url: service.url,
      connections: INVITE_CONNECTIONS,
      duration: ctx.duration,
      warmup: ctx.warmup,
      targets: [service],
      requests: [
        {
          method: 'POST',
          path: '/v1/invitations',
          headers: { authorization: `Bearer ${org.callerToken}`, 'content-type': 'application/json' },
          setupRequest: (req: object) => ({ ...req, body: JSON.stringify({ email: `invitee-${tag}-${n++}@bench.test`, role: 'member' }) }),
        },
      ],
    };
    const on = (load: LoadOptions, target: Target, label: string) => ({ ...load, label, url: target.url, targets: [target] });
    const earlier = previous ? [on(signUp, previous, 'POST /v1/auth/sign-up, previous build'), on(invite, previous, 'POST /v1/invitations, previous build')] : [];
    const [signUps, invitations, priorSignUps, priorInvitations] = (await measureRounds([signUp, invite, ...earlier], ROUNDS)) as [Measurement, Measurement, Measurement?, Measurement?];
    result.rows.push(signUps, invitations);
    if (priorSignUps && priorInvitations) {
      result.rows.push(priorSignUps, priorInvitations);
      result.checks.push(
        check('p50 sign-up / previous build', signUps.p50 / priorSignUps.p50, '<=', 1.2),
        check('p50 invitation-create / previous build', invitations.p50 / priorInvitations.p50, '<=', 1.2),
      );
    }
    const queued = await ctx.scratch.pool.query<{ status: string; n: string }>("SELECT status, count(*) AS n FROM mail_messages GROUP BY status ORDER BY status");
    result.notes.push(`messages: ${queued.rows.map((r) => `${r.n} ${r.status}`).join(', ') || 'none'} (sent to .eml files by the service's job runner during the run)`);
    result.notes.push(`p50: sign-up ${signUps.p50.toFixed(1)} ms, invitation-create ${invitations.p50.toFixed(1)} ms (with --previous, each against the earlier build: target ≤ 1.2×)`);
    result.checks.push(check('errors + non-2xx', signUps.errors + signUps.non2xx + invitations.errors + invitations.non2xx, '<=', 0));
  } finally {
    await Promise.all(targets.map((t) => t.stop()));
  }
  return result;
}
