// `npm run bench` (every scenario) and `npm run bench:smoke` (scenario 1 against its baseline,
// ~10 s of load). Options: --only=1,3  --duration=8  --warmup=2  --log-level=info  --no-build
// --keep-logs --keep-db (leave the scratch database for EXPLAIN; drop it yourself) --previous=<built checkout> --cpu-prof
// (V8 profiles of the service processes, kept with the logs) --compare-node-flags (scenario 1 also
// measures the service without the node flags of `npm start`, in the same alternating rounds).
// Talks only to 127.0.0.1; stops itself within 40 minutes whatever happens (BENCH_HARD_LIMIT_MIN).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createScratchDatabase, type ScratchDatabase } from './lib/db';
import { makeContext, type BenchContext } from './lib/context';
import { killAll, ROOT } from './lib/procs';
import { machine, renderScenario, saveResults, type ScenarioResult } from './lib/report';
import { scenarioOrg } from './scenarios/s1-org';
import { scenarioGrants } from './scenarios/s2-grants';
import { scenarioPlugin } from './scenarios/s3-plugin';
import { scenarioAnalytics } from './scenarios/s4-analytics';
import { scenarioIngest } from './scenarios/s5-ingest';
import { scenarioMixed } from './scenarios/s6-mixed';
import { scenarioWebhooks } from './scenarios/s7-webhooks';
import { scenarioAudit } from './scenarios/s8-audit';
import { scenarioHeartbeat } from './scenarios/s9-heartbeat';
import { scenarioScim } from './scenarios/s10-scim';
import { scenarioGrowth } from './scenarios/s11-growth';
import { scenarioSignIn } from './scenarios/s12-sign-in';
import { scenarioPeer } from './scenarios/s13-peer';
import { scenarioMailQueued } from './scenarios/s14-mail-queued';
import { scenarioObservability } from './scenarios/s15-observability';
import { scenarioAccessToken, scenarioClientCredentials } from './scenarios/s16-oauth';
import { scenarioTokens } from './scenarios/s18-tokens';
import { scenarioJwtReads } from './scenarios/s19-jwt-reads';
import { scenarioPurge } from './scenarios/s20-purge';

/** Every scenario with a long --duration stays well inside this (BENCH_HARD_LIMIT_MIN overrides). */
const HARD_LIMIT_MS = Number(process.env.BENCH_HARD_LIMIT_MIN ?? 40) * 60_000;

interface Args {
  smoke: boolean;
  only: Set<string> | null;
  duration: number;
  warmup: number;
  logLevel: string;
  build: boolean;
  keepLogs: boolean;
  keepDb: boolean;
  cpuProf: boolean;
  compareNodeFlags: boolean;
  /** A checkout of an earlier commit, built, to measure against in the same run (scenarios 1, 3). */
  previous: string | undefined;
}

function parseArgs(argv: string[]): Args {
  const get = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
  const smoke = argv.includes('--smoke');
  return {
    smoke,
    // --smoke alone is CI's scenario 1; with --only, a smoke-sized run of those scenarios.
    only: get('only') ? new Set(get('only')!.split(',')) : smoke ? new Set(['1']) : null,
    duration: Number(get('duration') ?? (smoke ? 4 : 8)),
    warmup: Number(get('warmup') ?? (smoke ? 1 : 2)),
    logLevel: get('log-level') ?? 'info',
    build: !argv.includes('--no-build'),
    keepLogs: argv.includes('--keep-logs'),
    keepDb: argv.includes('--keep-db'),
    cpuProf: argv.includes('--cpu-prof'),
    compareNodeFlags: argv.includes('--compare-node-flags'),
    previous: get('previous'),
  };
}

const SCENARIOS: [string, (ctx: BenchContext) => Promise<ScenarioResult>][] = [
  ['1', scenarioOrg],
  ['2', scenarioGrants],
  ['3', scenarioPlugin],
  ['4', scenarioAnalytics],
  ['5', scenarioIngest],
  ['6', scenarioMixed],
  ['7', scenarioWebhooks],
  ['8', scenarioAudit],
  ['9', scenarioHeartbeat],
  ['10', scenarioScim],
  ['11', scenarioGrowth],
  ['12', scenarioSignIn],
  ['13', scenarioPeer],
  ['14', scenarioMailQueued],
  ['15', scenarioObservability],
  ['16', scenarioAccessToken],
  ['17', scenarioClientCredentials],
  ['18', scenarioTokens],
  ['19', scenarioJwtReads],
  ['20', scenarioPurge],
];

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  const started = Date.now();
  let scratch: ScratchDatabase | null = null;
  const logDir = mkdtempSync(path.join(tmpdir(), 'cp-bench-'));
  let cleaned = false;
  const cleanup = async () => {
    if (cleaned) return;
    cleaned = true;
    killAll();
    if (args.keepDb && scratch) {
      console.log(`bench: keeping ${scratch.name} (--keep-db); drop it with: dropdb -h 127.0.0.1 ${scratch.name}`);
      await scratch.release();
      return;
    }
    await scratch?.drop().catch((err) => console.error(`could not drop ${scratch?.name}: ${err instanceof Error ? err.message : err}`));
  };
  const watchdog = setTimeout(() => {
    console.error(`bench: hard limit of ${HARD_LIMIT_MS / 60_000} minutes reached; stopping`);
    void cleanup().finally(() => process.exit(3));
  }, HARD_LIMIT_MS);
  watchdog.unref();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => void cleanup().finally(() => process.exit(130)));
  }

  if (args.build) {
    console.log('bench: building the service (npm run build)');
    const build = spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
    if (build.status !== 0) console.warn('bench: the build reported errors; measuring what it emitted');
  }
  if (!existsSync(path.join(ROOT, 'dist', 'src', 'main.js'))) throw new Error('dist/src/main.js is missing: run npm run build');

  const results: ScenarioResult[] = [];
  try {
    scratch = await createScratchDatabase();
    console.log(`bench: scratch database ${scratch.name}; process logs in ${logDir}`);
    const ctx = makeContext({ scratch, logDir, duration: args.duration, warmup: args.warmup, smoke: args.smoke, logLevel: args.logLevel, cpuProf: args.cpuProf, compareNodeFlags: args.compareNodeFlags }, args.previous);
    for (const [id, run] of SCENARIOS) {
      if (args.only && !args.only.has(id)) continue;
      const t0 = Date.now();
      let result: ScenarioResult;
      try {
        result = await run(ctx);
      } catch (err) {
        killAll();
        result = { id, title: `scenario ${id}`, setup: [], rows: [], checks: [], notes: [], failed: err instanceof Error ? err.stack ?? err.message : String(err) };
      }
      result.notes.push(`scenario wall time ${((Date.now() - t0) / 1000).toFixed(0)} s`);
      results.push(result);
      console.log(`\n${renderScenario(result)}`);
    }
  } finally {
    await cleanup();
    clearTimeout(watchdog);
  }

  const header = [
    `Run ${new Date().toISOString()} on ${machine()}; total ${((Date.now() - started) / 1000).toFixed(0)} s.`,
    `Service: node dist/src/main.js with LOG_LEVEL=${args.logLevel}; Postgres server at 127.0.0.1:5432 (scratch database, dropped at the end).`,
  ];
  const file = saveResults(results, header);
  console.log(`bench: results written to ${path.relative(ROOT, file)}`);

  const failed = results.filter((r) => r.failed);
  const broken = results.some((r) => r.rows.some((row) => row.errors > 0 || row.non2xx > 0));
  if (!args.keepLogs && !args.cpuProf && failed.length === 0 && !broken) rmSync(logDir, { recursive: true, force: true });
  else console.log(`bench: process logs kept in ${logDir}`);
  if (failed.length > 0) {
    console.error(`bench: ${failed.length} scenario(s) failed: ${failed.map((f) => f.id).join(', ')}`);
    return 1;
  }
  // The smoke run (CI) fails only when something crashed or answered errors, never on speed.
  if (args.smoke && broken) {
    console.error('bench: errors or non-2xx responses during the smoke run');
    return 1;
  }
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof Error ? err.stack : err);
    killAll();
    process.exit(1);
  },
);
