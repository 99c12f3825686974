import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync, readFileSync, readdirSync } from 'node:fs';
import { cpus } from 'node:os';
import { createServer } from 'node:net';
import path from 'node:path';

export const ROOT = path.resolve(__dirname, '..', '..');

/** Every child this run started, so the watchdog and the exit path can stop them all. */
const children = new Set<ChildProcess>();

export function liveChildren(): ChildProcess[] {
  return [...children];
}

/** A free port on 127.0.0.1 (the OS picks it; the tiny race with another process is acceptable here). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface Target {
  name: string;
  pid: number;
  port: number;
  url: string;
  child: ChildProcess;
  logFile: string;
  stop(): Promise<void>;
}

export interface SpawnOptions {
  name: string;
  /** The program's arguments after `node`. */
  args: string[];
  env: Record<string, string>;
  logFile: string;
  /** Path polled until it answers 200. */
  readyPath?: string;
}

/**
 * Starts `node <args>` as its own process (so its memory is measured alone), output to a log
 * file, and waits until it answers on 127.0.0.1.
 */
export async function startProcess(options: SpawnOptions): Promise<Target> {
  const port = await freePort();
  const out = openSync(options.logFile, 'a');
  const child = spawn(process.execPath, options.args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', NODE_ENV: 'production', ...options.env, PORT: String(port) },
    stdio: ['ignore', out, out],
  });
  closeSync(out);
  children.add(child);
  let exited: string | null = null;
  child.on('exit', (code, signal) => {
    exited = `exited with ${code ?? signal}`;
    children.delete(child);
  });
  const url = `http://127.0.0.1:${port}`;
  // A loaded machine (shared with other work) can take longer to start a process: BENCH_START_TIMEOUT_MS.
  const startTimeoutMs = Number(process.env.BENCH_START_TIMEOUT_MS ?? 30_000);
  const deadline = Date.now() + startTimeoutMs;
  for (;;) {
    if (exited) throw new Error(`${options.name} ${exited} before answering; see ${options.logFile}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${options.name} did not answer within ${startTimeoutMs / 1000} s; see ${options.logFile}`);
    }
    try {
      const res = await fetch(`${url}${options.readyPath ?? '/health'}`, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      if (res.status === 200) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    name: options.name,
    pid: child.pid!,
    port,
    url,
    child,
    logFile: options.logFile,
    stop: () => stopProcess(child),
  };
}

export function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const hard = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => {
      clearTimeout(hard);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

export function killAll(): void {
  for (const child of children) child.kill('SIGKILL');
}

/** Resident memory of one process, from /proc (kB → MB). */
function readStatus(pid: number): { rssMb: number; hwmMb: number } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
    return { rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024 };
  } catch {
    return null;
  }
}

/** User + system CPU time of a process in seconds (from /proc/<pid>/stat). */
function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After the command: state is field 0, utime is 11, stime is 12 (in clock ticks, 100 Hz on Linux).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** CPU seconds of every process named `postgres` on this machine (the server and its backends), by pid. */
function postgresCpuSeconds(): Map<number, number> {
  const seconds = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'postgres') seconds.set(Number(entry), cpuSeconds(Number(entry)));
    } catch {
      // gone meanwhile
    }
  }
  return seconds;
}

/** Busy and total CPU time of the whole machine, in clock ticks (the first line of /proc/stat). */
function machineTicks(): { busy: number; total: number } {
  const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/);
  const ticks = fields.slice(0, 8).map(Number);
  const total = ticks.reduce((a, b) => a + b, 0);
  // idle and iowait are the fourth and fifth fields.
  return { busy: total - ticks[3]! - ticks[4]!, total };
}

export interface MachineSample {
  /** CPU the local Postgres server (all its processes) used per wall second; null when none runs here. */
  postgresCores: number | null;
  /** CPU the whole machine used per wall second (every process: load generator, Postgres, targets). */
  busyCores: number;
}

/**
 * Where a machine's cores went during a window: Postgres's share and the total. Only meaningful
 * when the database server runs on this machine (the default, 127.0.0.1); a backend that
 * starts during the window is counted from zero, one that exits is not counted.
 */
export function sampleMachine(): { stop(): MachineSample } {
  const startPg = postgresCpuSeconds();
  const startTicks = machineTicks();
  const started = Date.now();
  return {
    stop() {
      const wall = (Date.now() - started) / 1000;
      const endPg = postgresCpuSeconds();
      const endTicks = machineTicks();
      let pgSeconds = 0;
      for (const [pid, seconds] of endPg) pgSeconds += seconds - (startPg.get(pid) ?? 0);
      const cores = cpus().length;
      return {
        postgresCores: endPg.size > 0 && wall > 0 ? pgSeconds / wall : null,
        busyCores: endTicks.total > startTicks.total ? ((endTicks.busy - startTicks.busy) / (endTicks.total - startTicks.total)) * cores : 0,
      };
    },
  };
}

export interface ProcessSample {
  /** Highest VmRSS seen while sampling (MB). */
  peakRssMb: number;
  /** The kernel's own peak (VmHWM) at the end: includes start-up and earlier phases (MB). */
  hwmMb: number;
  /** CPU time the process used during the window, per wall second (1.0 = one full core). */
  cpuCores: number;
}

/** Samples the memory of some processes every 50 ms until stopped. */
export function sampleProcesses(pids: number[]): { stop(): ProcessSample[] } {
  const peaks = pids.map(() => 0);
  const cpuStart = pids.map(cpuSeconds);
  const started = Date.now();
  const tick = () => {
    pids.forEach((pid, i) => {
      const s = readStatus(pid);
      if (s && s.rssMb > peaks[i]!) peaks[i] = s.rssMb;
    });
  };
  tick();
  const timer = setInterval(tick, 50);
  return {
    stop() {
      clearInterval(timer);
      tick();
      const wall = (Date.now() - started) / 1000;
      return pids.map((pid, i) => ({
        peakRssMb: peaks[i]!,
        hwmMb: readStatus(pid)?.hwmMb ?? 0,
        cpuCores: wall > 0 ? (cpuSeconds(pid) - cpuStart[i]!) / wall : 0,
      }));
    },
  };
}
