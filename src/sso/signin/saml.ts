import { randomBytes } from 'node:crypto';
import type { AppDeps } from '../../domain/deps';
import { Invalid } from '../../lib/errors';
import { sha256Hex } from '../../lib/crypto';
import * as limits from '../../protection/rate-limit';
import type { Origin } from '../../users/service';
import { peekSamlInResponseTo, samlAuthorizeUrl, samlSpFor, SamlRejected, verifySamlResponse, type SamlIdpConfig, type SamlProfile } from '../saml';
import { finishSignIn, settle, stateRefused, usableConnection } from './finish';
import type { SignInOutcome } from './outcome';
import * as store from './store';
import type { SignInConnection } from './store';

export interface StateBase {
  connectionId: string;
  organizationId: string;
  returnTo: string | null;
  verifierHash: string;
  now: Date;
  expiresAt: Date;
}

/** An accepted assertion id is remembered at least this long when the assertion names no end. */
const ASSERTION_MEMORY_MS = 24 * 3600_000;

function idpOf(connection: SignInConnection): SamlIdpConfig {
  return { idpEntityId: connection.saml_idp_entity_id!, idpSsoUrl: connection.saml_idp_sso_url!, idpCertificate: connection.saml_idp_certificate! };
}

/** SAML start: an AuthnRequest (HTTP-Redirect) whose id the response must answer; RelayState is our state. */
export async function startSaml(deps: AppDeps, connection: SignInConnection, base: StateBase): Promise<string> {
  const state = randomBytes(32).toString('base64url');
  const { url, requestId } = await samlAuthorizeUrl(idpOf(connection), samlSpFor(deps.settings.publicBaseUrl, connection.id), state);
  await store.insertLoginState(deps.db, { ...base, hash: sha256Hex(state), codeVerifierSealed: null, nonce: null, samlRequestId: requestId });
  return url;
}

/**
 * POST /v1/auth/sso/saml/acs. The login state is found by RelayState (or, when an identity
 * provider drops it, by the response's InResponseTo, read without trusting it); the response is
 * verified against the connection's certificate and the state's request id. The state is spent
 * and the assertion id recorded inside the sign-in transaction: a replay is refused, and a refused
 * sign-in spends neither.
 */
export async function completeSaml(deps: AppDeps, form: { SAMLResponse: string; RelayState?: string }, origin: Origin): Promise<SignInOutcome> {
  const { ip } = origin;
  await limits.assertNotLimited(deps, 'ssoIp', ip);
  const now = deps.clock.now();
  let row: store.LoginStateRow | undefined;
  if (form.RelayState) {
    row = await store.findLoginState(deps.db, { hash: sha256Hex(form.RelayState) }, now);
  } else {
    const inResponseTo = peekSamlInResponseTo(form.SAMLResponse);
    row = inResponseTo ? await store.findLoginState(deps.db, { samlRequestId: inResponseTo }, now) : undefined;
  }
  if (!row || !row.saml_request_id) {
    await limits.recordFailure(deps, 'ssoIp', ip);
    throw stateRefused(['body', 'RelayState']);
  }
  const pending = { row, field: ['body', 'RelayState'], origin };
  const requestId = row.saml_request_id;
  return settle(deps, pending, ip, async () => {
    const connection = await usableConnection(deps, pending, 'saml');
    let profile: SamlProfile;
    try {
      profile = await verifySamlResponse(idpOf(connection), samlSpFor(deps.settings.publicBaseUrl, connection.id), form.SAMLResponse, { requestId, now: deps.clock.now() });
    } catch (err) {
      if (err instanceof SamlRejected) throw Invalid.at(['body', 'SAMLResponse'], `The SAML response was refused: ${err.reason}.`);
      throw err;
    }
    const remembered = new Date(now.getTime() + ASSERTION_MEMORY_MS);
    const expiresAt = profile.notOnOrAfter && profile.notOnOrAfter > remembered ? profile.notOnOrAfter : remembered;
    const identity = { subject: profile.subject, email: profile.email, name: null, groups: profile.groups };
    return finishSignIn(deps, connection, identity, pending, async (trx) => {
      const fresh = await store.recordSamlAssertion(trx, { connectionId: connection.id, assertionId: profile.assertionId, now, expiresAt });
      if (!fresh) throw Invalid.at(['body', 'SAMLResponse'], 'The SAML assertion was already used.');
    });
  });
}
