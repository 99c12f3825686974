import { Router, type NextFunction, type Request, type Response } from 'express';
import type { Front, FrontTools } from '../contract/fronts';
import type { AppDeps } from '../domain/deps';
import { signingKeys } from './keys';
import { createProvider, type Provider } from './provider';
import { apiResourceMetadata } from './resources';
import { answerStructuredTokens } from './structured-tokens';
import { interactionsRouter } from './interactions';

/**
 * The authorization server as a front (src/contract/fronts.ts; docs/oauth.md): oidc-provider's
 * endpoints under /oauth, its metadata at the two well-known addresses of the issuer
 * (PUBLIC_BASE_URL), and the protected-resource metadata of the API (RFC 9728). The library reads
 * its own request bodies (form-encoded, RFC 6749), so the body layer leaves its paths alone.
 */
export const OAUTH_MOUNT = '/oauth';
const DISCOVERY = '/.well-known/openid-configuration';

export const oauthFront: Front = {
  name: 'oauth',
  ownBodyPaths: ['/oauth/token', '/oauth/token/introspection', '/oauth/token/revocation', '/oauth/device/auth', '/oauth/device', '/oauth/reg'],
  // The sign-in and consent forms (./interactions.ts) parse their own small urlencoded bodies.
  ownBodyPrefixes: ['/oauth/interaction/', '/oauth/auth/'],
  mount: (tools) => oauthRouter(tools),
};

/** The provider of the current key set: built again when the keys change (a rotation here or on another replica). */
function providers(deps: AppDeps) {
  let current: { version: string; provider: Provider; callback: ReturnType<Provider['callback']> } | undefined;
  return async () => {
    const keys = await signingKeys(deps.db, deps.secrets, deps.clock.now());
    if (current?.version !== keys.version) {
      const provider = createProvider(deps, keys);
      provider.use(answerStructuredTokens(deps));
      current = { version: keys.version, provider, callback: provider.callback() };
    }
    return current;
  };
}

function oauthRouter(tools: FrontTools): Router {
  const deps = tools.deps;
  const publicBase = new URL(deps.settings.publicBaseUrl);
  const current = providers(deps);

  /**
   * Hands the request to the library as if it came to PUBLIC_BASE_URL: the metadata's endpoints are
   * the issuer's, whatever Host the request carried (the library reads X-Forwarded-* with `proxy`).
   */
  const toLibrary = (req: Request, res: Response, next: NextFunction) => {
    req.headers['x-forwarded-host'] = publicBase.host;
    req.headers['x-forwarded-proto'] = publicBase.protocol.slice(0, -1);
    current()
      .then(({ callback }) => callback(req, res))
      .catch((err: unknown) => next(err));
  };

  const router = Router();
  // RFC 8414 metadata and the OpenID discovery document: the same document, the library's.
  router.get(['/.well-known/oauth-authorization-server', DISCOVERY], (req, res, next) => {
    req.url = DISCOVERY;
    req.originalUrl = `${OAUTH_MOUNT}${DISCOVERY}`;
    toLibrary(req, res, next);
  });
  router.get('/.well-known/oauth-protected-resource/v1', (_req, res) => {
    res.status(200).json(apiResourceMetadata(deps.settings.publicBaseUrl));
  });
  // Our sign-in and consent pages answer the library's interactions before it sees the path.
  router.use(interactionsRouter(tools, current));
  router.use(OAUTH_MOUNT, toLibrary);
  return router;
}
