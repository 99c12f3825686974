import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync, readFileSync } from 'node:fs';
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
