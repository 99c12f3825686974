import type { BenchContext } from '../lib/context';
import { measureRounds, type LoadOptions } from '../lib/load';
import { check, type ScenarioResult } from '../lib/report';
import { seedOrganization } from '../seed/org';
import { seedDirectoryUsers } from '../seed/directory-users';
import { newId } from '../../src/lib/ids';
import { randomSecret, sha256Hex } from '../../src/lib/crypto';

const USERS = 10_000;
const OTHER_USERS = 10_000;
const PAGE = 100;
const DEEP_START = 9_000;
/** A full initial sync as Entra ID sends it: every User created one after another, then each Group and its member PATCHes. */
const SYNC_USERS = 2_000;
const SYNC_GROUPS = 50;

/**
 * Scenario 10: SCIM at 10,000 directory users (next to another organization of 10,000): a first
 * page of `GET /scim/v2/Users`, a page at startIndex=9000, `filter=userName eq "…"`, and creates
 * (`POST /scim/v2/Users`, each a new User that links to a new member). The deep page and the filter
 * should cost about what the first page costs (within 1.5× at p50) and stay under 50 ms: the page
 * is cut in SQL over an index. Then a full initial sync of 2,000 Users and 50 Groups as Entra sends
 * it (sequential creates, then per Group a create and member PATCHes): its time and errors.
 */
export async function scenarioScim(ctx: BenchContext): Promise<ScenarioResult> {
  const result: ScenarioResult = {
    id: '10',
    title: `SCIM at ${USERS.toLocaleString('en')} directory users: first page, startIndex=${DEEP_START}, filter by userName, create; an initial sync of ${SYNC_USERS.toLocaleString('en')} Users and ${SYNC_GROUPS} Groups`,
    setup: [
      `1 connection; targets take turns in rounds (${ctx.warmup} s warm-up each, ${ctx.duration} s measured each in total)`,
      `${USERS.toLocaleString('en')} directory users, plus another organization of ${OTHER_USERS.toLocaleString('en')}; count=${PAGE}; seeded set-based, then VACUUM ANALYZE`,
      `sync: ${SYNC_USERS.toLocaleString('en')} sequential POST /Users, then per Group a POST and PATCHes adding 40 members each, in a fresh organization`,
    ],
    rows: [],
    checks: [],
    notes: [],
  };
  const db = ctx.scratch.database.db;
  const t0 = Date.now();
  // The org seeder makes an owner and an admin (its benchmark caller); SCIM members fill the rest.
  const org = await seedOrganization(db, { name: 'SCIM bench', members: 2, teams: 0, plan: 'enterprise' });
  const other = await seedOrganization(db, { name: 'SCIM other', members: 2, teams: 0, plan: 'enterprise' });
  await seedDirectoryUsers(db, org.organizationId, USERS, 'scim');
  await seedDirectoryUsers(db, other.organizationId, OTHER_USERS, 'other');
  const token = randomSecret('cpscim');
  await db
    .insertInto('scim_tokens')
    .values({ id: newId('scimToken'), organization_id: org.organizationId, name: 'bench', prefix: token.slice(0, 14), token_hash: sha256Hex(token), created_by_member_id: org.ownerMemberId, created_at: new Date(), last_used_at: null, revoked_at: null })
    .execute();
  await ctx.scratch.pool.query('VACUUM ANALYZE directory_users');
  await ctx.scratch.analyze();
  result.notes.push(`seeding took ${((Date.now() - t0) / 1000).toFixed(0)} s`);

  const service = await ctx.startService('s10-service');
  try {
    const headers = { authorization: `Bearer ${token}`, accept: 'application/scim+json' };
    const target = `user-scim-${String(7_777).padStart(5, '0')}@bench.test`;
    let created = 0;
    const create = { method: 'POST', path: '/scim/v2/Users', headers: { ...headers, 'content-type': 'application/scim+json' } };
    const paths: [string, string, number][] = [
      ['first page (startIndex=1)', `/scim/v2/Users?startIndex=1&count=${PAGE}`, PAGE],
      [`startIndex=${DEEP_START}`, `/scim/v2/Users?startIndex=${DEEP_START}&count=${PAGE}`, PAGE],
      ['filter userName eq', `/scim/v2/Users?filter=${encodeURIComponent(`userName eq "${target.toUpperCase()}"`)}`, 1],
    ];
    for (const [label, path, expected] of paths) {
      const probe = await fetch(`${service.url}${path}`, { headers });
      const body = (await probe.json()) as { itemsPerPage?: number; totalResults?: number };
      if (probe.status !== 200 || body.itemsPerPage !== expected) throw new Error(`${label} answered ${probe.status}: ${JSON.stringify(body).slice(0, 300)}`);
    }
    const loads: LoadOptions[] = paths.map(([label, path]) => ({ label, url: service.url, path, headers, connections: 1, duration: ctx.duration, warmup: ctx.warmup, targets: [service] }));
    loads.push({
      label: 'create (POST /Users)',
      url: service.url,
      connections: 1,
      duration: ctx.duration,
      warmup: ctx.warmup,
      targets: [service],
      requests: [{ ...create, setupRequest: (req) => ({ ...req, body: JSON.stringify({ schemas: [USER], userName: `created-${process.pid}-${created++}@bench.test`, name: { givenName: 'Bench', familyName: String(created) } }) }) }],
    });
    const [first, deep, filtered, creates] = await measureRounds(loads, 4);
    result.rows = [first!, deep!, filtered!, creates!];
    result.checks.push(
      check(`p50 startIndex=${DEEP_START} / p50 first page`, deep!.p50 / first!.p50, '<=', 1.5),
      check('p50 filter / p50 first page', filtered!.p50 / first!.p50, '<=', 1.5),
      check(`p50 startIndex=${DEEP_START}, ms (guide)`, deep!.p50, '<=', 50),
      check('p50 filter, ms (guide)', filtered!.p50, '<=', 50),
      check('p50 create, ms (guide)', creates!.p50, '<=', 50),
      check('errors + non-2xx', result.rows.reduce((n, r) => n + r.errors + r.non2xx, 0), '<=', 0),
    );

    // A full initial sync in an organization of its own, as Entra sends it.
    const fresh = await seedOrganization(db, { name: 'SCIM sync', members: 2, teams: 0, plan: 'enterprise' });
    const syncToken = randomSecret('cpscim');
    await db
      .insertInto('scim_tokens')
      .values({ id: newId('scimToken'), organization_id: fresh.organizationId, name: 'sync', prefix: syncToken.slice(0, 14), token_hash: sha256Hex(syncToken), created_by_member_id: fresh.ownerMemberId, created_at: new Date(), last_used_at: null, revoked_at: null })
      .execute();
    const sync = await initialSync(service.url, syncToken, ctx.smoke ? SYNC_USERS / 10 : SYNC_USERS, ctx.smoke ? SYNC_GROUPS / 10 : SYNC_GROUPS);
    result.notes.push(`initial sync: ${sync.users} Users and ${sync.groups} Groups (${sync.patches} member PATCHes) in ${(sync.ms / 1000).toFixed(1)} s, ${sync.errors} errors`);
    result.checks.push(check('initial sync errors', sync.errors, '<=', 0));
    return result;
  } finally {
    await service.stop();
  }
}

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

/** Entra's initial cycle: each User created in turn, then each Group created and filled by PATCHes of 40 members. */
async function initialSync(url: string, token: string, users: number, groups: number) {
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json', accept: 'application/scim+json' };
  const send = async (method: string, path: string, body: unknown) => {
    const res = await fetch(`${url}/scim/v2${path}`, { method, headers, body: JSON.stringify(body) });
    const json = (await res.json().catch(() => ({}))) as { id?: string };
    return { ok: res.ok, id: json.id };
  };
  const started = Date.now();
  let errors = 0;
  let patches = 0;
  const ids: string[] = [];
  for (let i = 0; i < users; i++) {
    const upn = `sync.user.${i}@sync.bench.test`;
    const res = await send('POST', '/Users', {
      schemas: [USER, 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User'],
      externalId: `entra-${i}`,
      userName: upn,
      active: true,
      displayName: `Sync User ${i}`,
      emails: [{ primary: true, type: 'work', value: upn }],
      name: { givenName: 'Sync', familyName: `User ${i}` },
      'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User': { employeeNumber: String(i), department: `Dept ${i % 50}` },
    });
    if (res.ok && res.id) ids.push(res.id);
    else errors++;
  }
  for (let g = 0; g < groups; g++) {
    const res = await send('POST', '/Groups', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], externalId: `group-${g}`, displayName: `Sync Group ${g}`, members: [] });
    if (!res.ok || !res.id) {
      errors++;
      continue;
    }
    const members = ids.filter((_, i) => i % groups === g);
    for (let at = 0; at < members.length; at += 40) {
      patches++;
      const patch = await send('PATCH', `/Groups/${res.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'Add', path: 'members', value: members.slice(at, at + 40).map((value) => ({ value })) }] });
      if (!patch.ok) errors++;
    }
  }
  return { users: ids.length, groups, patches, errors, ms: Date.now() - started };
}
