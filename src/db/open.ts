import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Settings } from '../settings';
import { connectEmbedded, connectServer, type Database } from './connect';

/** The server database when `DATABASE_URL` is set, else the embedded one in `DATA_DIR`. */
export async function openDatabase(settings: Settings): Promise<Database> {
  if (settings.databaseUrl) return connectServer(settings.databaseUrl);
  await mkdir(settings.dataDir, { recursive: true });
  return connectEmbedded({ dataDir: join(settings.dataDir, 'pglite') });
}

/**
 * SECRET_KEY encrypts stored secrets. On a server database it must be given (every process must
 * share it); the embedded mode is single-process, so it creates one in DATA_DIR on first start.
 */
export async function resolveSecretKey(settings: Settings): Promise<string> {
  if (settings.secretKey) return settings.secretKey;
  if (settings.databaseUrl) throw new Error('SECRET_KEY must be set when DATABASE_URL is set (all processes must share it).');
  const file = join(settings.dataDir, 'secret-key');
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch {
    const key = randomBytes(32).toString('base64url');
    await mkdir(settings.dataDir, { recursive: true });
    await writeFile(file, `${key}\n`, { mode: 0o600, flag: 'wx' });
    return key;
  }
}
