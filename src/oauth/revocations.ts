import type { Db } from '../db/schema';
import type { SecretBox } from '../lib/crypto';
import { keyOf } from './records';

/**
 * Revoked access tokens (docs/oauth.md#introspection-and-revocation): an access token is a JWT nobody stores, so
 * revoking one records its `jti` (hashed, as every record key) until the token would have expired;
 * the API's token check (src/principal/access-token.ts) looks for it on every request.
 */
const MODEL = 'RevokedAccessToken';

export const revokedKeyOf = (jti: string) => keyOf(MODEL, jti);

export async function revokeAccessToken(db: Db, secrets: SecretBox, token: { jti: string; exp: number; client_id: string }): Promise<void> {
  await db
    .insertInto('oauth_records')
    .values({
      id: revokedKeyOf(token.jti),
      model: MODEL,
      payload_sealed: secrets.encrypt(JSON.stringify({ clientId: token.client_id, exp: token.exp })),
      expires_at: new Date(token.exp * 1000),
    })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
}
