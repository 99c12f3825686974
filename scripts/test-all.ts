// npm test: the whole suite on server Postgres, then on embedded PGlite the files that exercise
// what differs between the two (the layer between the service and the engine: int8 and date
// parsing, one connection, the embedded start; PGLITE in jest.config.js). Extra CLI args go to
// jest (`npm test -- test/api/org.test.ts`; a file outside PGLITE runs on server Postgres only);
// TEST_DBS=pg runs only one database. The two runs go side by side (below, main).
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, readdirSync } from 'node:fs';
import { appendFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from 'pg';

const ROOT = path.resolve(__dirname, '..');
const JEST_BIN = path.join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js');
const KNOWN_DBS = ['pg', 'pglite'] as const;
type Db = (typeof KNOWN_DBS)[number];

async function pgAnswers(): Promise<boolean> {
  const client = new Client({
    host: '127.0.0.1',
    port: 5432,
    user: 'root',
    database: 'test',
    connectionTimeoutMillis: 2000,
  });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

// CI images and fresh machines may have the cluster installed but stopped; start it the way
// the machine documents rather than failing every pg test with ECONNREFUSED.
async function ensurePostgres(): Promise<boolean> {
  if (await pgAnswers()) return true;
  const confDir = '/etc/postgresql';
  const versions = existsSync(confDir) ? readdirSync(confDir) : [];
  if (versions.length !== 1) {
    console.error(`Postgres at 127.0.0.1:5432 does not answer and ${confDir} has no single version to start.`);
    return false;
  }
  console.log(`Postgres does not answer; starting cluster ${versions[0]}/main`);
  spawnSync('pg_ctlcluster', ['--skip-systemctl-redirect', versions[0], 'main', 'start'], { stdio: 'inherit' });
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (await pgAnswers()) return true;
    await new Promise((r) => setTimeout(r, 500));
  }
  console.error('Postgres did not answer within 30 s of starting it.');
  return false;
}

type RunResult = { passed: number; failed: number; ok: boolean; note?: string };

type JestReport = {
  success: boolean;
  numPassedTests: number;
  numFailedTests: number;
  numRuntimeErrorTestSuites: number;
  startTime: number;
  testResults: { name: string; startTime?: number; endTime?: number }[];
};

/**
 * Where a run's time went: its wall time and its slowest files (each file's own time; two workers
 * run files side by side, so they add up to about twice the wall time). docs/development.md
 * "Where CI's time goes" reads these lines.
 */
function timesReport(db: Db, r: JestReport): string {
  const files = r.testResults
    .filter((f) => f.startTime && f.endTime)
    .map((f) => ({ file: path.relative(ROOT, f.name), seconds: (f.endTime! - f.startTime!) / 1000 }))
    .sort((a, b) => b.seconds - a.seconds);
  const wall = Math.max(r.startTime, ...r.testResults.map((f) => f.endTime ?? 0)) - r.startTime;
  const total = files.reduce((sum, f) => sum + f.seconds, 0);
  const lines = [`\n${db}: ${files.length} files, ${(wall / 1000).toFixed(0)} s wall, ${total.toFixed(0)} s in files; slowest:`];
  for (const f of files.slice(0, 12)) lines.push(`  ${f.seconds.toFixed(1).padStart(6)} s  ${f.file}`);
  return `${lines.join('\n')}\n`;
}

interface RunOptions {
  /** Where jest's output goes instead of this process's (printed by the caller when the run ends). */
  logFile?: string;
}

async function runJest(db: Db, args: string[], options: RunOptions = {}): Promise<RunResult> {
  const dir = await mkdtemp(path.join(tmpdir(), `jest-${db}-`));
  const reportFile = path.join(dir, 'report.json');
  try {
    // NODE_OPTIONS is set, not inherited, so nothing of tsx's loader leaks into jest workers.
    const env = { ...process.env, TEST_DB: db, NODE_OPTIONS: '--experimental-vm-modules' };
    const log = options.logFile ? createWriteStream(options.logFile) : undefined;
    const code = await new Promise<number>((resolve) => {
      // Files named on the command line that are not in the PGlite set leave that run empty.
      const empty = db === 'pglite' && args.length > 0 ? ['--passWithNoTests'] : [];
      const child = spawn(process.execPath, [JEST_BIN, '--json', `--outputFile=${reportFile}`, ...empty, ...args], {
        cwd: ROOT,
        env,
        stdio: log ? ['ignore', 'pipe', 'pipe'] : 'inherit',
      });
      if (log) {
        child.stdout?.pipe(log, { end: false });
        child.stderr?.pipe(log, { end: false });
      }
      child.on('error', () => resolve(1));
      child.on('close', (c) => resolve(c ?? 1));
    });
    if (log) await new Promise<void>((resolve) => log.end(resolve));
    if (!existsSync(reportFile)) return { passed: 0, failed: 1, ok: false, note: `jest exited ${code} without a report (no tests matched, or jest crashed)` };
    const r = JSON.parse(await readFile(reportFile, 'utf8')) as JestReport;
    if (args.length === 0) {
      try {
        const times = timesReport(db, r);
        if (options.logFile) await appendFile(options.logFile, times);
        else process.stdout.write(times);
      } catch (err) {
        console.error('Could not read the run\'s times:', err); // the times are a report, never a failure
      }
    }
    // A suite that cannot even load (syntax error, failing beforeAll import) has no failed
    // tests; count each as one failure so the totals never read clean when the run was not.
    const failed = r.numFailedTests + r.numRuntimeErrorTestSuites;
    const note = r.numRuntimeErrorTestSuites > 0 ? `${r.numRuntimeErrorTestSuites} suite(s) failed to run` : undefined;
    return { passed: r.numPassedTests, failed, ok: code === 0 && r.success, note };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function selectedDbs(): Db[] {
  const raw = (process.env.TEST_DBS ?? KNOWN_DBS.join(',')).split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = raw.filter((d) => !(KNOWN_DBS as readonly string[]).includes(d));
  if (unknown.length > 0 || raw.length === 0) {
    throw new Error(`TEST_DBS must list some of ${KNOWN_DBS.join(', ')}; got "${process.env.TEST_DBS}"`);
  }
  return raw as Db[];
}

/**
 * Both databases run side by side: the PGlite run (its output held back and printed after the
 * server-Postgres run's) alongside the server-Postgres run, two workers each. Not one worker for
 * PGlite: jest runs a single worker's files in its own process, where a file's leftover handle
 * would keep the run from ending instead of being reported and its worker ended. The
 * server run's files wait much of their time (service processes starting, leases running out, mail
 * and webhook receivers, Chromium), and the PGlite run's setup and files fill that time instead of
 * following the server run. Each run still has its own template or data dir and report.
 */
async function runDb(db: Db, args: string[], options: RunOptions = {}): Promise<RunResult> {
  if (db === 'pg' && !(await ensurePostgres())) return { passed: 0, failed: 1, ok: false, note: 'Postgres unavailable, not run' };
  if (!options.logFile) console.log(`\n=== jest with TEST_DB=${db} ===`);
  return runJest(db, args, options);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const dbs = selectedDbs();
  const results: [Db, RunResult][] = [];
  if (dbs.length === 1 || process.env.TEST_SEQUENTIAL === '1') {
    // TEST_SEQUENTIAL=1: one run after the other (to compare, or to read one run's output as it comes).
    for (const db of dbs) results.push([db, await runDb(db, args)]);
  } else {
    const dir = await mkdtemp(path.join(tmpdir(), 'jest-side-'));
    const logFile = path.join(dir, 'pglite.log');
    try {
      const [pg, pglite] = await Promise.all([runDb('pg', args), runDb('pglite', args, { logFile })]);
      console.log('\n=== jest with TEST_DB=pglite (ran beside the server-Postgres run) ===');
      process.stdout.write(await readFile(logFile, 'utf8').catch(() => ''));
      results.push(['pg', pg], ['pglite', pglite]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  console.log('');
  let passed = 0;
  let failed = 0;
  for (const [db, r] of results) {
    console.log(`${db}: ${r.passed} passed, ${r.failed} failed${r.note ? ` (${r.note})` : ''}`);
    passed += r.passed;
    failed += r.failed;
  }
  console.log(`${passed} passed, ${failed} failed`);
  if (passed + failed === 0) console.error('No tests ran.');
  if (passed === 0 || results.some(([, r]) => !r.ok)) process.exit(1);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
