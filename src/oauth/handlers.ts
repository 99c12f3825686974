import type { HandlerMap } from '../contract';
import { rotateSigningKey } from './keys';

export const oauthHandlers: HandlerMap<'adminRotateOAuthKeys'> = {
  adminRotateOAuthKeys: async (ctx) => {
    const { deps } = ctx;
    const rotated = await rotateSigningKey(deps.db, deps.secrets, deps.clock.now(), deps.settings.oauth.accessTokenTtlSeconds);
    deps.logger.info({ kid: rotated.kid, retired: rotated.retired }, 'oauth signing key rotated');
    return {
      status: 200,
      body: { ok: true, item: { signingKeyId: rotated.kid, retiredKeyIds: rotated.retired, retiredKeysVerifyUntil: rotated.verifyUntil.toISOString() } },
    };
  },
};
