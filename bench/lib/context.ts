import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { ScratchDatabase } from './db';
import { ROOT, startProcess, type Target } from './procs';

export const SECRET_KEY = 'bench-secret-key-0123456789abcdefghijklmnopqrstuvwxyz';

/**
 * The node flags the service ships with, read from `npm start` (package.json), so the bench runs
 * the service exactly as it is started in production (the Dockerfile's CMD is checked against the
 * same script by test/seams/start-command.test.ts).
 */
export function shippedNodeFlags(): string[] {
  const start = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start ?? '';
  const words = start.trim().split(/\s+/);
  if (words[0] !== 'node' || words.at(-1) !== 'dist/src/main.js') throw new Error(`npm start is not "node [flags] dist/src/main.js": ${start}`);
  return words.slice(1, -1);
}

export interface BenchContext {
  scratch: ScratchDatabase;
  /** Where process logs go for this run (a temporary folder). */
  logDir: string;
  /** Seconds of each measurement and of its warm-up. */
  duration: number;
  warmup: number;
  smoke: boolean;
  /** Log level of the service processes (the shipped default is info). */
  logLevel: string;
  /** Write a V8 CPU profile of every service process into logDir/profiles (`--cpu-prof`). */
  cpuProf: boolean;
  /**
   * The service as it ships: `node <the flags of npm start> dist/src/main.js` on the scratch
   * database; `nodeFlags` replaces the shipped flags (scenario 1's --compare-node-flags).
   */
  startService(name: string, env?: Record<string, string>, nodeFlags?: string[]): Promise<Target>;
  /** Scenario 1 also measures the service without its shipped node flags (`--compare-node-flags`). */
  compareNodeFlags?: boolean;
  /** A baseline program from bench/baselines/. */
  startBaseline(file: string, env?: Record<string, string>): Promise<Target>;
  /**
   * The previous build (`--previous=<checkout>`, built with `npm run build`) on the same scratch
   * database and data, for same-run comparisons of the service against itself; undefined without
   * the option.
   */
  startPrevious?: (name: string, env?: Record<string, string>) => Promise<Target>;
}

/** The migration names a build knows (its dist/src/db/migrations), read by running its own code. */
function migrationsOf(checkout: string): string[] {
  const index = path.join(checkout, 'dist', 'src', 'db', 'migrations', 'index.js');
  const run = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(index)}).migrationProvider.getMigrations().then((m) => console.log(JSON.stringify(Object.keys(m))))`], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`cannot read the previous build's migrations: ${run.stderr}`);
  return JSON.parse(run.stdout) as string[];
}

/**
 * Starts the previous build on the scratch database. Its migrator refuses a database that ran
 * migrations it does not know, so those rows of kysely_migration are hidden while it starts (it
 * then finds nothing to apply) and put back once it answers. The schema stays the new one: the
 * columns and tables added since are unknown to the old code, which is what a rolling upgrade
 * runs too.
 */
async function startPreviousBuild(base: Omit<BenchContext, 'startService' | 'startBaseline'>, checkout: string, name: string, env: Record<string, string>): Promise<Target> {
  const main = path.join(checkout, 'dist', 'src', 'main.js');
  if (!existsSync(main)) throw new Error(`--previous: ${main} does not exist (run npm ci and npm run build in that checkout)`);
  const known = migrationsOf(checkout);
  const hidden = await base.scratch.pool.query<{ name: string; timestamp: string }>('DELETE FROM kysely_migration WHERE name <> ALL($1::text[]) RETURNING name, timestamp', [known]);
  try {
    return await startProcess({
      name,
      args: [...shippedNodeFlags(), ...profileFlags(base, 'previous'), main],
      env: { DATABASE_URL: base.scratch.url, SECRET_KEY, LOG_LEVEL: base.logLevel, ...env },
      logFile: path.join(base.logDir, `${name}.log`),
    });
  } finally {
    for (const row of hidden.rows) await base.scratch.pool.query('INSERT INTO kysely_migration (name, timestamp) VALUES ($1, $2)', [row.name, row.timestamp]);
  }
}

/** `--cpu-prof`: a V8 profile per process, the earlier build's apart from this one's. */
function profileFlags(base: Pick<BenchContext, 'cpuProf' | 'logDir'>, build: 'service' | 'previous'): string[] {
  return base.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${path.join(base.logDir, 'profiles', build)}`] : [];
}

export function makeContext(base: Omit<BenchContext, 'startService' | 'startBaseline'>, previous?: string): BenchContext {
  return {
    ...base,
    ...(previous ? { startPrevious: (name: string, env: Record<string, string> = {}) => startPreviousBuild(base, path.resolve(previous), name, env) } : {}),
    startService: (name, env = {}, nodeFlags = shippedNodeFlags()) =>
      startProcess({
        name,
        args: [...nodeFlags, ...profileFlags(base, 'service'), path.join(ROOT, 'dist', 'src', 'main.js')],
        env: { DATABASE_URL: base.scratch.url, SECRET_KEY, LOG_LEVEL: base.logLevel, ...env },
        logFile: path.join(base.logDir, `${name}.log`),
      }),
    startBaseline: (file, env = {}) =>
      startProcess({
        name: file,
        args: [path.join(ROOT, 'bench', 'baselines', file)],
        env: { DATABASE_URL: base.scratch.url, ...env },
        logFile: path.join(base.logDir, `${file}.log`),
      }),
  };
}
