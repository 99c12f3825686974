import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema';
import type { Clock } from '../lib/clock';
import type { SecretBox } from '../lib/crypto';

/**
 * The service's audit key: one Ed25519 key pair (node:crypto) that signs every organization's
 * checkpoints (docs/audit.md, "Checkpoints"). The first process that needs it makes it and stores
 * it in `audit_signing_keys` (the private key sealed with SECRET_KEY); a replica racing it loses
 * the insert and reads the winner's row, so every process signs with the same key.
 *
 * Its name is `<host[:port] of PUBLIC_BASE_URL>/audit`, and it is published as a signed-note
 * verifier string `<name>+<key id, 8 hex digits>+<base64 of 0x01 ‖ the 32-byte public key>`, where
 * the key id is the first four bytes of SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public key).
 */
export const ED25519_TYPE = 0x01;
const KEY_ROW = 'audit';

export interface AuditKey {
  name: string;
  /** The 4-byte key id every signature starts with. */
  keyId: Buffer;
  publicKey: Buffer;
  publicKeyObject: KeyObject;
  privateKey: KeyObject;
  /** `<name>+<hex key id>+<base64 key>`, what GET /.well-known/audit-key answers. */
  verifier: string;
}

interface KeyPair {
  publicKey: Buffer;
  privateKey: KeyObject;
}

/** One load per database handle (the row never changes once written). */
const loaded = new WeakMap<object, Promise<KeyPair>>();

export function auditKeyName(publicBaseUrl: string): string {
  return `${new URL(publicBaseUrl).host}/audit`;
}

export function keyIdOf(name: string, publicKey: Buffer): Buffer {
  return createHash('sha256')
    .update(Buffer.concat([Buffer.from(`${name}\n`, 'utf8'), Buffer.from([ED25519_TYPE]), publicKey]))
    .digest()
    .subarray(0, 4);
}

function rawPublicKey(key: KeyObject): Buffer {
  const jwk = key.export({ format: 'jwk' });
  return Buffer.from(jwk.x!, 'base64url');
}

async function loadOrCreate(db: Kysely<DB>, secrets: SecretBox, clock: Clock): Promise<KeyPair> {
  const read = () => db.selectFrom('audit_signing_keys').select(['public_key', 'private_key_sealed']).where('id', '=', KEY_ROW).executeTakeFirst();
  let row = await read();
  if (!row) {
    const pair = generateKeyPairSync('ed25519');
    const sealed = secrets.encrypt(pair.privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'));
    await db
      .insertInto('audit_signing_keys')
      .values({ id: KEY_ROW, public_key: rawPublicKey(pair.publicKey).toString('base64'), private_key_sealed: sealed, created_at: clock.now() })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    row = await read();
    if (!row) throw new Error('the audit key could not be stored');
  }
  const privateKey = createPrivateKey({ key: Buffer.from(secrets.decrypt(row.private_key_sealed), 'base64'), format: 'der', type: 'pkcs8' });
  const publicKey = Buffer.from(row.public_key, 'base64');
  // A row whose public key is not the private key's (edited by hand) must not sign anything.
  if (!rawPublicKey(createPublicKey(privateKey)).equals(publicKey)) throw new Error('the stored audit key pair does not match');
  return { publicKey, privateKey };
}

/** The audit key (made on first use), named after PUBLIC_BASE_URL. */
export async function auditKey(deps: { db: Kysely<DB>; secrets: SecretBox; clock: Clock; publicBaseUrl: string }): Promise<AuditKey> {
  let pending = loaded.get(deps.db);
  if (!pending) {
    pending = loadOrCreate(deps.db, deps.secrets, deps.clock);
    loaded.set(deps.db, pending);
    // A failure (the database was down) is not remembered: the next call tries again.
    pending.catch(() => loaded.delete(deps.db));
  }
  const { publicKey, privateKey } = await pending;
  const name = auditKeyName(deps.publicBaseUrl);
  const keyId = keyIdOf(name, publicKey);
  return {
    name,
    keyId,
    publicKey,
    privateKey,
    publicKeyObject: createPublicKey(privateKey),
    verifier: `${name}+${keyId.toString('hex')}+${Buffer.concat([Buffer.from([ED25519_TYPE]), publicKey]).toString('base64')}`,
  };
}
