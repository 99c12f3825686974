import type { HandlerMap } from '../contract';
import { positioned } from '../lib/pagination';
import { rotateSigningKey } from './keys';
import { listRegisteredClients, toRegisteredClient } from './registered-clients';

export const oauthHandlers: HandlerMap<'adminRotateOAuthKeys' | 'adminListOAuthClients'> = {
  adminRotateOAuthKeys: async (ctx) => {
    const { deps } = ctx;
    const rotated = await rotateSigningKey(deps.db, deps.secrets, deps.clock.now(), deps.settings.oauth.accessTokenTtlSeconds);
    deps.logger.info({ kid: rotated.kid, retired: rotated.retired }, 'oauth signing key rotated');
    return {
      status: 200,
      body: { ok: true, item: { signingKeyId: rotated.kid, retiredKeyIds: rotated.retired, retiredKeysVerifyUntil: rotated.verifyUntil.toISOString() } },
    };
  },

  adminListOAuthClients: async (ctx) => {
    const { deps } = ctx;
    const now = deps.clock.now();
    const body = await deps.cursors.page('admin-oauth-clients', ctx.query, async (after, take) => positioned(await listRegisteredClients(deps.db, now, after, take)), (row) => toRegisteredClient(row));
    return { status: 200, body };
  },
};
