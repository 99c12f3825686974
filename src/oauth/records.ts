import type { Adapter, AdapterPayload } from 'oidc-provider';
import type { Db } from '../db/schema';
import type { SecretBox } from '../lib/crypto';
import { sha256Hex } from '../lib/crypto';

/**
 * oidc-provider's storage in `oauth_records` (docs/oauth.md#storage), so every replica answers
 * every step of a flow another began. The library names a record by model and id; an opaque
 * token's id is the token itself, so the row's key is SHA-256(model:id) and the payload (which
 * repeats the id) is sealed with SECRET_KEY. Its other lookups (by grant, by interaction uid, by
 * device user code) go through hashes too. Expired rows are not answered; the job runner's OAuth
 * upkeep (./upkeep.ts) removes them.
 *
 * Clients are not records: `Client` lookups go to `findClient` (service accounts, organization and
 * registered clients, ./clients.ts) and a registration's upsert to `saveClient`.
 */
export const keyOf = (model: string, id: string) => sha256Hex(`${model}:${id}`);

/** Ids longer than this are no id the library made (a client sent garbage): not looked up. */
const MAX_ID_LENGTH = 512;

export interface RecordsDeps {
  db: Db;
  secrets: SecretBox;
  /** A client's metadata by client_id, or undefined (service accounts, organization and registered clients). */
  findClient(id: string): Promise<AdapterPayload | undefined>;
  /** A client dynamic registration made (the library's `Client` upsert). */
  saveClient(id: string, payload: AdapterPayload): Promise<void>;
  /** The library ended a grant (reuse of a rotated refresh token or of a code, a revoked refresh token). */
  onGrantRevoked?(grantKey: string): Promise<void>;
}

export function recordsAdapter(deps: RecordsDeps): new (model: string) => Adapter {
  const { db, secrets } = deps;

  const open = (row: { payload_sealed: string; consumed_at: Date | null } | undefined): AdapterPayload | undefined => {
    if (!row) return undefined;
    const payload = JSON.parse(secrets.decrypt(row.payload_sealed)) as AdapterPayload;
    if (row.consumed_at) payload.consumed = Math.floor(row.consumed_at.getTime() / 1000);
    return payload;
  };

  const live = () => db.selectFrom('oauth_records').select(['payload_sealed', 'consumed_at']).where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', new Date())]));

  return class RecordsAdapter implements Adapter {
    constructor(private readonly model: string) {}

    async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
      if (this.model === 'Client') return deps.saveClient(id, payload);
      const row = {
        id: keyOf(this.model, id),
        model: this.model,
        payload_sealed: secrets.encrypt(JSON.stringify(payload)),
        grant_key: typeof payload.grantId === 'string' ? keyOf('Grant', payload.grantId) : null,
        uid_key: typeof payload.uid === 'string' ? keyOf('uid', payload.uid) : null,
        user_code_key: typeof payload.userCode === 'string' ? keyOf('userCode', payload.userCode) : null,
        expires_at: expiresIn ? new Date(Date.now() + expiresIn * 1000) : null,
      };
      await db
        .insertInto('oauth_records')
        .values(row)
        .onConflict((oc) => oc.column('id').doUpdateSet({ payload_sealed: row.payload_sealed, grant_key: row.grant_key, uid_key: row.uid_key, user_code_key: row.user_code_key, expires_at: row.expires_at }))
        .execute();
    }

    async find(id: string): Promise<AdapterPayload | undefined> {
      if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ID_LENGTH) return undefined;
      if (this.model === 'Client') return deps.findClient(id);
      return open(await live().where('id', '=', keyOf(this.model, id)).executeTakeFirst());
    }

    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      if (typeof uid !== 'string' || uid.length === 0 || uid.length > MAX_ID_LENGTH) return undefined;
      return open(await live().where('model', '=', this.model).where('uid_key', '=', keyOf('uid', uid)).executeTakeFirst());
    }

    async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      if (typeof userCode !== 'string' || userCode.length === 0 || userCode.length > MAX_ID_LENGTH) return undefined;
      return open(await live().where('model', '=', this.model).where('user_code_key', '=', keyOf('userCode', userCode)).executeTakeFirst());
    }

    async consume(id: string): Promise<void> {
      await db.updateTable('oauth_records').set({ consumed_at: new Date() }).where('id', '=', keyOf(this.model, id)).execute();
    }

    async destroy(id: string): Promise<void> {
      await db.deleteFrom('oauth_records').where('id', '=', keyOf(this.model, id)).execute();
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await db.deleteFrom('oauth_records').where('grant_key', '=', keyOf('Grant', grantId)).execute();
      await deps.onGrantRevoked?.(keyOf('Grant', grantId));
    }
  };
}

/** Ends a grant: its refresh tokens, codes and the grant itself (a member's authorization revoked, src/authorizations). */
export async function destroyGrantRecords(db: Db, grantKey: string): Promise<void> {
  await db.deleteFrom('oauth_records').where((eb) => eb.or([eb('grant_key', '=', grantKey), eb('id', '=', grantKey)])).execute();
}

/** Removes up to `batch` records past their expiry (the upkeep's call, ./upkeep.ts); returns how many went. */
export async function pruneExpiredRecords(db: Db, now: Date, batch = 5000): Promise<number> {
  const result = await db
    .deleteFrom('oauth_records')
    .where('id', 'in', (eb) => eb.selectFrom('oauth_records').select('id').where('expires_at', '<=', now).limit(batch))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
