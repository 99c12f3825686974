import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { freePort } from './service-process';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import pg from 'pg';

/**
 * A Postgres cluster of its own for fault tests (stop it mid-load, start it again), in a temporary
 * folder on a free port — never the shared server. Made with initdb from the installed Postgres
 * (/usr/lib/postgresql/<version>/bin). initdb refuses to run as root, so as root the cluster runs
 * as the `postgres` user (via runuser) in a folder handed to it; its superuser is still `root`.
 */
export interface ThrowawayPostgres {
  port: number;
  url(database: string): string;
  start(): void;
  /** `fast` ends sessions cleanly; `immediate` is a crash (no shutdown checkpoint). */
  stop(mode?: 'fast' | 'immediate'): void;
  destroy(): void;
}

function binDir(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(path.join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? path.join(root, versions[0], 'bin') : null;
}

function userId(name: string): { uid: number; gid: number } | null {
  const res = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', name], { encoding: 'utf8' });
  if (res.status !== 0 || gid.status !== 0) return null;
  return { uid: Number(res.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** Why a throwaway cluster cannot be made here, or null when it can. */
export function throwawayUnavailableReason(): string | null {
  if (!binDir()) return 'no Postgres binaries under /usr/lib/postgresql/*/bin';
  if (userInfo().uid === 0 && !userId('postgres')) return 'running as root and there is no postgres user to run the cluster as';
  return null;
}

export async function startThrowawayPostgres(): Promise<ThrowawayPostgres> {
  const bin = binDir();
  if (!bin) throw new Error('no Postgres binaries under /usr/lib/postgresql/*/bin');
  const asRoot = userInfo().uid === 0;
  const owner = asRoot ? userId('postgres') : null;
  const dir = mkdtempSync(path.join(tmpdir(), 'cp-pg-'));
  const data = path.join(dir, 'data');
  if (owner) {
    chownSync(dir, owner.uid, owner.gid);
    chmodSync(dir, 0o700);
  }
  const run = (command: string, args: string[]) => {
    const [cmd, argv] = owner ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args];
    const res = spawnSync(cmd, argv, { encoding: 'utf8', cwd: dir, timeout: 60_000 });
    if (res.status !== 0) throw new Error(`${path.basename(command)} failed (${res.status}): ${res.stderr || res.stdout}`);
  };
  const port = await freePort();
  run(path.join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'root', '--no-sync', '-E', 'UTF8']);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=on -c max_connections=50`;
  const cluster: ThrowawayPostgres = {
    port,
    url: (database) => `postgres://root@127.0.0.1:${port}/${database}`,
    start: () => run(path.join(bin, 'pg_ctl'), ['-D', data, '-o', options, '-l', path.join(dir, 'log'), '-w', '-t', '60', 'start']),
    stop: (mode = 'fast') => run(path.join(bin, 'pg_ctl'), ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']),
    destroy: () => {
      try {
        cluster.stop('immediate');
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  cluster.start();
  return cluster;
}

export async function createDatabaseOn(cluster: ThrowawayPostgres, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: cluster.url('postgres') });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
}
