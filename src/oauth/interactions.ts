import { Router, urlencoded, type NextFunction, type Request, type Response } from 'express';
import type * as OidcProvider from 'oidc-provider';
import type { FrontTools } from '../contract/fronts';
import { PERMISSION_CATALOGUE } from '../access/permissions';
import { signIn } from '../auth/service';
import * as mfa from '../mfa/challenges';
import * as authorizations from '../authorizations/service';
import type { ConsentClient } from '../authorizations/service';
import { AppError } from '../lib/errors';
import { deriveKey, hmacBase64url, safeEqual } from '../lib/crypto';
import { PAGE_CSP, PAGE_HEADERS } from '../pages/layout';
import { templateContext } from '../mail/queue';
import type { ClientKind } from './clients';
import { keyOf } from './records';
import { apiResource, OFFLINE_ACCESS } from './resources';
import { OFFLINE_ASKED, type Provider } from './provider';
import { INTERACTION_PATH } from './interaction-path';
import { formatUserCode } from './device-pages';
import { consentPage, messagePage, secondFactorPage, signInPage, signInRefusal, type ConsentView } from './interaction-pages';

/**
 * The authorization server's own pages (docs/oauth.md#sign-in-and-consent-authorization-code): oidc-provider sends a
 * browser that must sign in or consent to `/oauth/interaction/<uid>` (its `interactions.url`),
 * and these pages answer there, then hand the result back with `interactionFinished`. They follow
 * the hosted pages' rules (src/pages/layout.ts): server-rendered forms that work without
 * JavaScript, the one inline style allowed by hash, `frame-ancestors 'none'`, labelled fields.
 *
 * - Sign-in is the API's own: the password through `signIn` (its limits, its SSO enforcement, its
 *   audit), then the second factor through `mfa.verify` when the account holds one. What it proved
 *   (password, second factor) is kept with the interaction until consent, sealed in oauth_records.
 * - Consent names the client as its registration says (an outside client's name is its own claim,
 *   and said so), its redirect host, the scopes in the catalogue's words, and offers the person's
 *   organizations whose rules and policy admit the client; approving records the authorization
 *   (src/authorizations) and the library's grant in one step.
 * - CSRF: every form carries an HMAC of the interaction's uid under a key of SECRET_KEY, and the
 *   library's interaction cookie (SameSite=Lax, bound to the uid) must come with the POST.
 */

interface Proven {
  userId: string;
  secondFactor: boolean;
}

const LOGIN_MODEL = 'InteractionLogin';

export function interactionsRouter(tools: FrontTools, current: () => Promise<{ provider: Provider }>): Router {
  const deps = tools.deps;
  const productName = templateContext(deps.settings.mail).productName;
  const csrfKey = deriveKey(deps.settings.secretKey!, 'oauth-interaction-csrf');
  const csrfOf = (uid: string) => hmacBase64url(csrfKey, uid);
  const router = Router();
  const form = urlencoded({ extended: false, limit: '16kb', parameterLimit: 20 });

  /**
   * A page; `redirectTo` widens form-action to the client's registered redirect URI (validated by
   * the library before any interaction): browsers apply form-action to the redirects after a
   * submitted form, and consent's answer ends at the client.
   */
  const send = (res: Response, status: number, body: string, redirectTo?: string) => {
    res.status(status).set(PAGE_HEADERS);
    const target = redirectTo ? originOf(redirectTo) : null;
    if (target) res.set('content-security-policy', PAGE_CSP.replace("form-action 'self'", `form-action 'self' ${target}`));
    res.send(body);
  };

  async function remember(uid: string, proven: Proven, expiresAt: Date) {
    await deps.db
      .insertInto('oauth_records')
      .values({ id: keyOf(LOGIN_MODEL, uid), model: LOGIN_MODEL, payload_sealed: deps.secrets.encrypt(JSON.stringify(proven)), expires_at: expiresAt })
      .onConflict((oc) => oc.column('id').doUpdateSet({ payload_sealed: deps.secrets.encrypt(JSON.stringify(proven)), expires_at: expiresAt }))
      .execute();
  }

  async function recall(uid: string): Promise<Proven | null> {
    const row = await deps.db.selectFrom('oauth_records').select('payload_sealed').where('id', '=', keyOf(LOGIN_MODEL, uid)).where('expires_at', '>', new Date()).executeTakeFirst();
    return row ? (JSON.parse(deps.secrets.decrypt(row.payload_sealed)) as Proven) : null;
  }

  /** The interaction of this browser (its cookie) for the uid in the path, or an error page. */
  async function details(req: Request, res: Response) {
    const { provider } = await current();
    const interaction = await provider.interactionDetails(req, res);
    if (interaction.uid !== req.params.uid) throw new Refused('This sign-in link belongs to another browser session. Start again from the application.');
    return { provider, interaction };
  }

  const origin = (req: Request) => ({ ip: req.ip ?? '', userAgent: req.get('user-agent') });

  /** Who is signing in: what this interaction's sign-in proved, or the library's session (a signed-in browser). */
  async function who(interaction: OidcProvider.Interaction): Promise<Proven | null> {
    const proven = await recall(interaction.uid);
    if (proven) return proven;
    const accountId = interaction.session?.accountId;
    if (!accountId || interaction.prompt.name === 'login') return null;
    const member = await deps.db.selectFrom('members').select(['user_id']).where('id', '=', accountId).where('removed_at', 'is', null).executeTakeFirst();
    if (!member?.user_id) return null;
    const amr = (interaction.session as { amr?: string[] } | undefined)?.amr ?? [];
    return { userId: member.user_id, secondFactor: amr.includes('mfa') };
  }

  const handle = (fn: (req: Request, res: Response) => Promise<void>) => (req: Request, res: Response, next: NextFunction) => {
    fn(req, res).catch((err: unknown) => {
      if (err instanceof Refused) return send(res, 400, messagePage('This sign-in cannot go on', err.message, productName));
      if (err instanceof AppError && err.status < 500) return send(res, err.status, messagePage('This sign-in cannot go on', err.message, productName));
      if (isLibraryError(err)) return send(res, 400, messagePage('This sign-in cannot go on', 'The sign-in expired or was already used. Start again from the application.', productName));
      next(err);
    });
  };

  const checkCsrf = (req: Request) => {
    const given = typeof req.body?.csrf === 'string' ? req.body.csrf : '';
    if (!given || !safeEqual(given, csrfOf(req.params.uid as string))) throw new Refused('The form expired. Go back to the application and start again.');
  };

  router.get(`${INTERACTION_PATH}/:uid`, handle(async (req, res) => {
    const { provider, interaction } = await details(req, res);
    const proven = await who(interaction);
    if (!proven) return send(res, 200, signInPage({ uid: interaction.uid, csrf: csrfOf(interaction.uid), productName }));
    return showConsent(req, res, provider, interaction, proven);
  }));

  router.post(`${INTERACTION_PATH}/:uid/sign-in`, form, handle(async (req, res) => {
    checkCsrf(req);
    const { interaction } = await details(req, res);
    const email = String(req.body.email ?? '').slice(0, 320);
    const password = String(req.body.password ?? '').slice(0, 256);
    const again = (error: string, status: number) => send(res, status, signInPage({ uid: interaction.uid, csrf: csrfOf(interaction.uid), productName, email, error }));
    if (!email || !password) return again('Enter your e-mail address and password.', 400);
    let result: Awaited<ReturnType<typeof signIn>>;
    try {
      result = await signIn(tools.requestDeps(req, null), { email, password }, origin(req));
    } catch (err) {
      if (err instanceof AppError && err.status < 500) return again(signInRefusal(err), err.status);
      throw err;
    }
    if ('mfaRequired' in result && result.challenge) {
      return send(res, 200, secondFactorPage({ uid: interaction.uid, csrf: csrfOf(interaction.uid), productName, challenge: result.challenge.token }));
    }
    await remember(interaction.uid, { userId: result.user.id, secondFactor: false }, expiryOf(interaction));
    res.redirect(303, `${INTERACTION_PATH}/${interaction.uid}`);
  }));

  router.post(`${INTERACTION_PATH}/:uid/second-factor`, form, handle(async (req, res) => {
    checkCsrf(req);
    const { interaction } = await details(req, res);
    const challenge = String(req.body.challenge ?? '').slice(0, 256);
    const code = String(req.body.code ?? '').replace(/\s+/g, '').slice(0, 64);
    const method = /^\d{6}$/.test(code) ? 'totp' : 'recovery_code';
    try {
      const verified = await mfa.verify(tools.requestDeps(req, null), challenge, { method, code }, origin(req).ip, origin(req).userAgent);
      await remember(interaction.uid, { userId: verified.user.id, secondFactor: true }, expiryOf(interaction));
    } catch (err) {
      if (err instanceof AppError && err.status < 500) {
        return send(res, err.status, secondFactorPage({ uid: interaction.uid, csrf: csrfOf(interaction.uid), productName, challenge, error: err.message }));
      }
      throw err;
    }
    res.redirect(303, `${INTERACTION_PATH}/${interaction.uid}`);
  }));

  router.post(`${INTERACTION_PATH}/:uid/consent`, form, handle(async (req, res) => {
    checkCsrf(req);
    const { provider, interaction } = await details(req, res);
    const proven = await who(interaction);
    if (!proven) return res.redirect(303, `${INTERACTION_PATH}/${interaction.uid}`);
    if (req.body.decision !== 'approve') {
      await provider.interactionFinished(req, res, { error: 'access_denied', error_description: 'The person declined.' }, { mergeWithLastSubmission: false });
      return;
    }
    const request = await consentRequest(provider, interaction, proven);
    if ('refusal' in request) return send(res, 403, messagePage('You cannot authorize this application', request.refusal, productName));
    const choice = request.choices.find((c) => c.organizationId === req.body.organizationId && c.refused === null);
    if (!choice) return send(res, 400, consentPage({ ...request, uid: interaction.uid, csrf: csrfOf(interaction.uid), productName, error: 'Choose an organization.' }), String(interaction.params.redirect_uri ?? ''));

    const clientId = interaction.params.client_id as string;
    // A grant of the library per member: the chosen organization's member is the account.
    const grant = new provider.Grant({ accountId: choice.memberId, clientId });
    // The catalogue's keys are in the library's scope list too (client_credentials asks for them
    // without a resource), so the grant holds them both ways.
    grant.addResourceScope(request.resource, request.scopes.filter((s) => s !== OFFLINE_ACCESS).join(' '));
    grant.addOIDCScope(request.scopes.join(' '));
    const grantId = await grant.save();
    await authorizations.recordConsent(tools.requestDeps(req, null), {
      userId: proven.userId,
      organizationId: choice.organizationId,
      memberId: choice.memberId,
      client: request.client,
      scopes: request.scopes,
      resource: request.resource,
      grantKey: keyOf('Grant', grantId),
    });
    await deps.db.deleteFrom('oauth_records').where('id', '=', keyOf(LOGIN_MODEL, interaction.uid)).execute();
    await provider.interactionFinished(
      req,
      res,
      { login: { accountId: choice.memberId, amr: proven.secondFactor ? ['pwd', 'mfa'] : ['pwd'] }, consent: { grantId } },
      { mergeWithLastSubmission: false },
    );
  }));

  async function showConsent(_req: Request, res: Response, provider: Provider, interaction: OidcProvider.Interaction, proven: Proven) {
    const request = await consentRequest(provider, interaction, proven);
    if ('refusal' in request) return send(res, 403, messagePage('You cannot authorize this application', request.refusal, productName));
    send(res, 200, consentPage({ ...request, uid: interaction.uid, csrf: csrfOf(interaction.uid), productName }), String(interaction.params.redirect_uri ?? ''));
  }

  /** What consent shows and grants: the client as registered, the scopes asked within its limits, the organizations on offer. */
  async function consentRequest(provider: Provider, interaction: OidcProvider.Interaction, proven: Proven): Promise<ConsentView | { refusal: string }> {
    if (!(await authorizations.mayAuthorize(deps, proven.userId))) return { refusal: 'Confirm your e-mail address first: open the link in the message we sent you, then start again from the application.' };
    const clientId = interaction.params.client_id as string;
    const libraryClient = await provider.Client.find(clientId);
    if (!libraryClient) return { refusal: 'This application is not registered.' };
    const metadata = libraryClient.metadata() as { client_kind?: ClientKind; organization_id?: string; client_name?: string; scope?: string };
    const client: ConsentClient =
      metadata.client_kind === 'organization'
        ? { clientId, type: 'organization', name: metadata.client_name ?? clientId, organizationId: metadata.organization_id ?? null }
        : metadata.client_kind === 'dynamic'
          ? { clientId, type: 'dynamic', name: metadata.client_name ?? clientId, organizationId: null }
          : { clientId, type: 'metadata_document', name: metadata.client_name ?? new URL(clientId).host, organizationId: null };
    let registeredBy: string | null = null;
    if (client.organizationId) {
      const org = await deps.db.selectFrom('organizations').select('name').where('id', '=', client.organizationId).executeTakeFirst();
      registeredBy = org?.name ?? null;
    }
    const allowed = new Set((metadata.scope ?? '').split(' ').filter(Boolean));
    const asked = typeof interaction.params.scope === 'string' ? interaction.params.scope.split(' ').filter(Boolean) : [...allowed];
    const grantTypes = (metadata as { grant_types?: string[] }).grant_types ?? [];
    if (interaction.params[OFFLINE_ASKED] === 'true' && grantTypes.includes('refresh_token')) asked.push(OFFLINE_ACCESS);
    const scopes = [...new Set(asked.filter((s) => (s in PERMISSION_CATALOGUE || s === OFFLINE_ACCESS) && (client.type !== 'organization' || allowed.has(s))))];
    const resource = typeof interaction.params.resource === 'string' ? interaction.params.resource : apiResource(deps.settings.publicBaseUrl);
    const choices = await authorizations.organizationChoices(deps, proven.userId, client, proven.secondFactor);
    // The device flow (RFC 8628) has no redirect: the device polls; the page repeats its user code.
    const deviceCode = (interaction as { deviceCode?: string }).deviceCode;
    if (deviceCode) {
      const code = await provider.DeviceCode.find(deviceCode, { ignoreExpiration: true });
      return { client, registeredBy, scopes, resource, redirectHost: null, userCode: code ? formatUserCode(code.userCode) : null, choices };
    }
    return { client, registeredBy, scopes, resource, redirectHost: hostOf(String(interaction.params.redirect_uri ?? '')), userCode: null, choices };
  }

  return router;
}

/** A request these pages cannot go on with (another browser's interaction, a forged form): a page saying so. */
class Refused extends Error {}

function expiryOf(interaction: OidcProvider.Interaction): Date {
  return new Date((interaction.exp ?? Math.floor(Date.now() / 1000) + 3600) * 1000);
}

/** An http(s) origin for a CSP source list, or null (nothing else is written into the header). */
function originOf(uri: string): string | null {
  try {
    const url = new URL(uri);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.origin : null;
  } catch {
    return null;
  }
}

function hostOf(uri: string): string {
  try {
    return new URL(uri).host;
  } catch {
    return uri;
  }
}

function isLibraryError(err: unknown): boolean {
  return err instanceof Error && typeof (err as { error?: unknown }).error === 'string' && typeof (err as { status?: unknown }).status === 'number';
}
