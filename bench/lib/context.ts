import { readFileSync } from 'node:fs';
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
}

export function makeContext(base: Omit<BenchContext, 'startService' | 'startBaseline'>): BenchContext {
  return {
    ...base,
    startService: (name, env = {}, nodeFlags = shippedNodeFlags()) =>
      startProcess({
        name,
        args: [...nodeFlags, ...(base.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${path.join(base.logDir, 'profiles')}`] : []), path.join(ROOT, 'dist', 'src', 'main.js')],
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
