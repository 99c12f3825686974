import { inflateRawSync } from 'node:zlib';
import { Secret, TOTP } from 'otpauth';
import { LOCAL_FAKES, type TestApp } from '../support/app';
import type { Settings } from '../../src/settings';
import type { ManualClock } from '../support/clock';
import { LINK_PATHS } from '../../src/mail/templates';
import { bearer, PASSWORD, signUp, signUpUnverified, uniqueEmail, type SignedUpUser } from '../support/factories';
import { deliverToFolder, tokenIn } from '../support/mailbox';
import { startDnsServer, type TestDnsServer } from '../support/dns';
import { SSO_ENV, IDP_CLIENT, uniqueDomain, verifyDomain } from '../support/sso-signin';
import { FakeOAuthServer } from '../fakes/oauth-server';
import { FakeGraphServer } from '../fakes/suite-graph';
import { startFakeRuntime, type FakeRuntime } from '../fakes/worker-runtime';
import { startFakeLlm, type FakeLlm } from '../fakes/llm-providers';
import { OidcIdp } from '../fakes/oidc-idp';
import { SamlTestIdp, skipRequestSchemaValidation } from '../fakes/saml-idp';

// The walks sign in through SAML without testing it (test/sso/saml.test.ts does).
skipRequestSchemaValidation();
import { samlSpFor } from '../../src/sso/saml';
import type { OrgWorld } from './world';

/**
 * What the known-good requests of the valid-requests walk need besides the world: the local
 * fakes of the systems an operation calls (an OAuth server, the suite's identity and chat
 * services, a worker runtime, an LLM provider, DNS, an OIDC and a SAML identity provider), and
 * the steps that make a token, a code or a state the way a user's mail, authenticator or browser
 * would. Everything is made through the API (a verified SSO domain is inserted, as the SSO tests
 * do: DNS verification has its own request here).
 */
export interface Fakes {
  mcpAuth: FakeOAuthServer;
  suiteIdentity: FakeOAuthServer;
  graph: FakeGraphServer;
  runtime: FakeRuntime;
  llm: FakeLlm;
  dns: TestDnsServer;
  saml: SamlTestIdp;
  /** Started on first use (an oidc-provider instance). */
  oidc?: OidcIdp;
  stop(): Promise<void>;
}

export const SUITE_CLIENT = { tenantId: 'contoso.example', clientId: '11111111-2222-4333-8444-555555555555', clientSecret: 'suite-client-secret-Zq7x9', features: ['chatSend'] };
export const MCP_CLIENT = { clientId: 'mcp-client', clientSecret: 'mcp-client-secret-0123456789' };
export const LLM_KEYS = { openai: 'sk-known-good-openai', anthropic: 'sk-ant-known-good', azure: 'azure-known-good', google: 'google-known-good' };
/** The chat every known-good suite message goes to: the walk's external id (world.ts), known to the chat fake. */
export const CHAT_ID = 'chat-19:hardening@thread.v2';

export async function startFakes(): Promise<{ fakes: Fakes; settings: Partial<Settings>; env: Record<string, string> }> {
  const [mcpAuth, suiteIdentity, runtime, llm, dns] = await Promise.all([
    new FakeOAuthServer(MCP_CLIENT).start(),
    new FakeOAuthServer({ clientId: SUITE_CLIENT.clientId, clientSecret: SUITE_CLIENT.clientSecret, tenantPaths: true }).start(),
    startFakeRuntime(),
    startFakeLlm(LLM_KEYS),
    startDnsServer(),
  ]);
  const graph = await new FakeGraphServer((token) => suiteIdentity.validAccessTokens.has(token)).start();
  graph.chats.add(CHAT_ID);
  const fakes: Fakes = {
    mcpAuth,
    suiteIdentity,
    graph,
    runtime,
    llm,
    dns,
    saml: new SamlTestIdp(),
    stop: async () => {
      await Promise.all([mcpAuth.stop(), suiteIdentity.stop(), graph.stop(), runtime.close(), llm.close(), dns.close(), fakes.oidc?.stop()]);
    },
  };
  return {
    fakes,
    settings: { suiteGraphBaseUrl: graph.baseUrl, suiteLoginBaseUrl: suiteIdentity.baseUrl, dnsServers: [dns.address] },
    env: { ...LOCAL_FAKES, ...SSO_ENV },
  };
}

/** The current code of a TOTP secret, in a 30-second step no earlier code used (a code is good once). */
export function totpCode(t: TestApp, secret: string): string {
  (t.clock as ManualClock).advance(30_000);
  return new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({ timestamp: t.clock.now().getTime() });
}

/** A user with an authenticator app enrolled (start and confirm through the API). */
export async function totpUser(t: TestApp): Promise<SignedUpUser & { secret: string }> {
  const user = await signUp(t, 'totp');
  const start = await t.http.post('/v1/me/mfa/totp').set(...bearer(user.token));
  const confirm = await t.http.post('/v1/me/mfa/totp/confirm').set(...bearer(user.token)).send({ code: totpCode(t, start.body.secret) });
  if (confirm.status !== 200) throw new Error(`TOTP enrolment failed: ${confirm.status} ${JSON.stringify(confirm.body)}`);
  return { ...user, secret: start.body.secret };
}

/** The challenge token a password sign-in of a user with a second factor answers. */
export async function challengeOf(t: TestApp, email: string): Promise<string> {
  const res = await t.http.post('/v1/auth/sign-in').send({ email, password: PASSWORD });
  if (!res.body.mfaRequired) throw new Error(`sign-in of ${email} asked no second factor: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.challenge.token;
}

export interface MailTokens {
  verify: string;
  decline: string;
  reset: string;
  emailChange: string;
  invitation: string;
}

/**
 * The tokens only a mail carries, one of each kind, asked for together and read from one delivery
 * of the app's queued mail (each delivery parses every message so far): a verification for two new
 * users (one to verify, one to decline), a password reset, an e-mail change, an invitation.
 */
export async function mailTokens(t: TestApp, world: OrgWorld): Promise<MailTokens> {
  const [verifying, declining, resetting, changing] = await Promise.all([signUpUnverified(t, 'verifying'), signUpUnverified(t, 'declining'), signUp(t, 'reset'), signUp(t, 'change')]);
  const newEmail = uniqueEmail('changed');
  const invitee = uniqueEmail('accepting');
  await t.http.post('/v1/auth/password-reset').send({ email: resetting.email });
  await t.http.post('/v1/me/email').set(...bearer(changing.token)).send({ email: newEmail });
  await t.http.post('/v1/invitations').set(...bearer(world.owner.token)).send({ email: invitee, role: 'member' });
  const mail = await deliverToFolder(t);
  const token = (to: string, path: string) => {
    const last = mail.filter((m) => m.to.toLowerCase() === to.toLowerCase() && m.text.includes(path)).at(-1);
    if (!last) throw new Error(`no mail with ${path} reached ${to}`);
    return tokenIn(last, path);
  };
  return {
    verify: token(verifying.email, LINK_PATHS.verifyEmail),
    decline: token(declining.email, LINK_PATHS.verifyEmail),
    reset: token(resetting.email, LINK_PATHS.resetPassword),
    emailChange: token(newEmail, LINK_PATHS.confirmEmailChange),
    invitation: token(invitee, LINK_PATHS.acceptInvitation),
  };
}

/** The callback path an OAuth server's consent redirects the browser to (path and query, against the app). */
export async function consentRedirect(authorizeUrl: string): Promise<string> {
  const consent = await fetch(authorizeUrl, { redirect: 'manual' });
  const location = new URL(consent.headers.get('location') ?? '');
  return `${location.pathname}${location.search}`;
}

/** A per-member OAuth MCP connection on the fake OAuth server, and the owner's callback after consent. */
export async function mcpCallback(t: TestApp, world: OrgWorld, fakes: Fakes): Promise<{ connectionId: string; callback: string }> {
  const oauthClient = { authorizationUrl: fakes.mcpAuth.authorizeEndpoint(), tokenUrl: fakes.mcpAuth.tokenEndpoint(), ...MCP_CLIENT, scopes: ['tools.read'] };
  const created = await t.http
    .post('/v1/mcp-connections')
    .set(...bearer(world.owner.token))
    .send({ name: `known-good ${uniqueEmail('mcp')}`, url: 'https://mcp.example.test/known-good', authType: 'oauth', credentialMode: 'per_member', oauthClient, access: { orgWide: true } });
  const connectionId: string = created.body.item.id;
  const start = await t.http.post(`/v1/mcp-connections/${connectionId}/connect/start`).set(...bearer(world.owner.token));
  return { connectionId, callback: await consentRedirect(start.body.authorizeUrl) };
}

/** The suite's OAuth client set to the identity fake's, and the owner's callback after consent. */
export async function suiteCallback(t: TestApp, world: OrgWorld): Promise<string> {
  await t.http.put('/v1/capabilities/suite-365/oauth-client').set(...bearer(world.owner.token)).send(SUITE_CLIENT);
  const start = await t.http.post('/v1/capabilities/suite-365/connect/start').set(...bearer(world.owner.token));
  return consentRedirect(start.body.authorizeUrl);
}

/** A verified domain of the world's organization, for the e-mail an identity provider asserts. */
export async function ssoDomain(t: TestApp, world: OrgWorld): Promise<string> {
  const domain = uniqueDomain();
  await verifyDomain(t, world.owner.organizationId, domain);
  return domain;
}

/** A SAML connection to the SAML fake; a started sign-in answered by it (the form a browser posts), with its verifier. */
export async function samlAnswer(t: TestApp, world: OrgWorld, fakes: Fakes, returnTo?: string): Promise<{ form: Record<string, string>; verifier: string }> {
  const domain = await ssoDomain(t, world);
  const created = await t.http
    .post('/v1/sso/connections')
    .set(...bearer(world.owner.token))
    .send({ type: 'saml', name: `known-good SAML ${domain}`, ...fakes.saml.config() });
  const connectionId: string = created.body.item.id;
  const start = await t.http.post('/v1/auth/sso/start').send({ connectionId, ...(returnTo ? { returnTo } : {}) });
  // The request's id read from the redirect as it is (the SAML tests validate the AuthnRequest with
  // xmllint, seconds of a walk's time; here only its id is needed).
  const url = new URL(start.body.authorizeUrl);
  const requestXml = inflateRawSync(Buffer.from(url.searchParams.get('SAMLRequest')!, 'base64')).toString('utf8');
  const requestId = /\sID="([^"]+)"/.exec(requestXml)![1]!;
  const issued = await fakes.saml.respond(samlSpFor(t.settings.publicBaseUrl, connectionId), requestId, { nameId: `grace@${domain}` }, { now: t.clock.now() });
  return { form: { SAMLResponse: issued.samlResponse, RelayState: url.searchParams.get('RelayState')! }, verifier: start.body.verifier };
}

/** An OIDC connection to the oidc-provider fake and the callback its login sends the browser to. */
export async function oidcCallback(t: TestApp, world: OrgWorld, fakes: Fakes): Promise<string> {
  fakes.oidc ??= await OidcIdp.start({ clients: [IDP_CLIENT], accounts: {} });
  const idp = fakes.oidc;
  const domain = await ssoDomain(t, world);
  idp.accounts['acct-known-good'] = { email: `ada@${domain}`, emailVerified: true, name: 'Ada' };
  const created = await t.http
    .post('/v1/sso/connections')
    .set(...bearer(world.owner.token))
    .send({ type: 'oidc', name: `known-good OIDC ${domain}`, issuer: idp.issuer, clientId: IDP_CLIENT.clientId, clientSecret: IDP_CLIENT.clientSecret, scopes: ['openid', 'email', 'profile'] });
  const start = await t.http.post('/v1/auth/sso/start').send({ connectionId: created.body.item.id });
  const back = await idp.login(start.body.authorizeUrl, 'acct-known-good');
  return `${back.pathname}${back.search}`;
}
