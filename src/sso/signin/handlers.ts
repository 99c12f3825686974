import type { HandlerMap, HandlerResult } from '../../contract';
import * as signIn from './service';
import { completeSaml } from './saml';
import type { SignInOutcome } from './outcome';

interface SamlAcsForm {
  SAMLResponse: string;
  RelayState?: string;
}

type SignInOperations = 'startSso' | 'completeSsoOidc' | 'completeSsoSaml' | 'exchangeSsoCode';

/** A completed sign-in: 200 with the session, or 302 to `returnTo` (with `code` or `error`). */
function answer(outcome: SignInOutcome): HandlerResult<'completeSsoOidc'> {
  if (outcome.kind === 'redirect') return { status: 302, body: undefined, headers: { location: outcome.location, 'cache-control': 'no-store' } };
  return { status: 200, body: outcome.body, headers: { 'cache-control': 'no-store' } };
}

export const ssoSignInHandlers: HandlerMap<SignInOperations> = {
  startSso: async ({ deps, body, ip }) => ({ status: 200, body: { ok: true, ...(await signIn.startSso(deps, body, ip)) } }),
  completeSsoOidc: async ({ deps, query, headers, ip }) => answer(await signIn.completeOidc(deps, query, { ip, userAgent: headers['user-agent'] })),
  // A form body (SAML HTTP-POST binding): the generated types only describe JSON bodies.
  completeSsoSaml: async ({ deps, body, headers, ip }) => answer(await completeSaml(deps, body as unknown as SamlAcsForm, { ip, userAgent: headers['user-agent'] })),
  exchangeSsoCode: async ({ deps, body, headers, ip }) => ({
    status: 200,
    body: await signIn.exchangeSsoCode(deps, body, { ip, userAgent: headers['user-agent'] }),
    headers: { 'cache-control': 'no-store' },
  }),
};
