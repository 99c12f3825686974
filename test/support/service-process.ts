import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { TEST_RATE_LIMITS, TEST_SECRET_KEY } from './app';
import { ADMIN_DATABASE, serverUrl } from './env';

/** The real service (src/main.ts) as a child process on a server database, for multi-process tests. */
const ROOT = path.resolve(__dirname, '..', '..');

export async function adminSql(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl(ADMIN_DATABASE) });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/** Ports this process has handed out (never twice: a child may take seconds to listen). */
const handedOut = new Set<number>();

/**
 * A port nothing listens on, for a server started later (a service process, a receiver that is
 * down at first). Chosen below the kernel's ephemeral range (32768-60999 on Linux): a port the
 * kernel hands out for listen(0) is one it also gives outgoing connections as their source port,
 * and a connection of a test running beside this one could take it between the check and the
 * listen (EADDRINUSE). Each jest worker draws from its own thousand ports, so two test files
 * running side by side are never handed the same one; the PGlite run's workers, which run beside
 * the server-Postgres run's (scripts/test-all.ts), draw from others than its workers of the same id.
 */
export async function freePort(): Promise<number> {
  const worker = Number(process.env.JEST_WORKER_ID ?? 0) + (process.env.TEST_DB === 'pglite' ? 6 : 0);
  const base = 20_000 + (worker % 12) * 1_000;
  // Bounded: ports taken by other programs are never handed out, so the loop cannot count on them.
  for (let tries = 0; tries < 5_000; tries++) {
    const port = base + Math.floor(Math.random() * 1_000);
    if (handedOut.has(port) || !(await canListen(port))) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`freePort: no free port left in ${base}-${base + 999}`);
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

export interface ServiceProcess {
  port: number;
  url: string;
  child: ChildProcess;
  stderr(): string;
  /** What it wrote to stdout (its JSON log lines). */
  stdout(): string;
  /** SIGTERM and wait for the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL: no shutdown at all. */
  kill(): Promise<void>;
}

export async function startService(database: string, env: Record<string, string> = {}): Promise<ServiceProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      DATABASE_URL: serverUrl(database),
      SECRET_KEY: TEST_SECRET_KEY,
      PORT: String(port),
      LOG_LEVEL: 'warn',
      // Without SMTP_URL mail is written as files: somewhere outside the checkout.
      MAIL_DIR: path.join(tmpdir(), `cp-mail-${port}`),
      ...TEST_RATE_LIMITS,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  child.stdout!.on('data', (c) => (stdout += c));
  let stderr = '';
  child.stderr!.on('data', (c) => (stderr += c));
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    try {
      const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      if (res.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill('SIGKILL');
      throw new Error(`the service did not start: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    port,
    url,
    child,
    stderr: () => stderr,
    stdout: () => stdout,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exit;
    },
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exit;
    },
  };
}

/** JSON over fetch against a service process. */
export async function call(base: string, method: string, url: string, body?: unknown, token?: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}
