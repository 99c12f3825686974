import path from 'node:path';
import type { ScratchDatabase } from './db';
import { ROOT, startProcess, type Target } from './procs';

export const SECRET_KEY = 'bench-secret-key-0123456789abcdefghijklmnopqrstuvwxyz';

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
  /** The service as it ships: `node dist/src/main.js` on the scratch database. */
  startService(name: string, env?: Record<string, string>): Promise<Target>;
  /** A baseline program from bench/baselines/. */
  startBaseline(file: string, env?: Record<string, string>): Promise<Target>;
}

export function makeContext(base: Omit<BenchContext, 'startService' | 'startBaseline'>): BenchContext {
  return {
    ...base,
    startService: (name, env = {}) =>
      startProcess({
        name,
        args: [...(base.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${path.join(base.logDir, 'profiles')}`] : []), path.join(ROOT, 'dist', 'src', 'main.js')],
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
