import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OidcProviderBrowser } from './oidc-provider-browser';
import Provider, { type Configuration, type KoaContextWithOIDC } from 'oidc-provider';

/**
 * A real OpenID provider (panva's certified oidc-provider) running in-process on 127.0.0.1, for
 * tests of the SSO relying party. Authorization code + PKCE; consent is skipped (every client has
 * a grant for what it asks); a "browser" logs an account in through the development login form.
 * It prints "Unsupported runtime" on Node 20; the flow works.
 *
 * By default e-mail and groups reach the client only through UserInfo (the provider's conform
 * mode, as most real ones do for the code flow); `claimsInIdToken: true` puts them in the ID
 * token instead. Accounts are mutable: a test may change an account's groups or e-mail between
 * sign-ins.
 */
export interface IdpAccount {
  email?: string;
  emailVerified?: boolean;
  groups?: string[];
  name?: string;
}

export interface IdpClient {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
}

export interface OidcIdpOptions {
  clients: IdpClient[];
  /** accountId (the `sub`) → claims; defaults to STANDARD_ACCOUNTS. */
  accounts?: Record<string, IdpAccount>;
  claimsInIdToken?: boolean;
}

/** The accounts every SSO test needs: with e-mail and groups, without e-mail, outside the verified domain. */
export function standardAccounts(domain = 'acme.test'): Record<string, IdpAccount> {
  return {
    'acct-alice': { email: `alice@${domain}`, groups: ['engineering', 'admins'], name: 'Alice' },
    'acct-bob': { email: `bob@${domain}`, groups: [], name: 'Bob' },
    'acct-noemail': { groups: ['engineering'], name: 'No Mail' },
    'acct-outsider': { email: 'mallory@unverified.test', groups: ['admins'], name: 'Mallory' },
  };
}

export class OidcIdp {
  readonly accounts: Record<string, IdpAccount>;
  issuer = '';
  private server!: Server;
  private provider!: Provider;

  private constructor(private readonly options: OidcIdpOptions) {
    this.accounts = options.accounts ?? standardAccounts();
  }

  static async start(options: OidcIdpOptions): Promise<OidcIdp> {
    quietNotices();
    const idp = new OidcIdp(options);
    await idp.listen();
    return idp;
  }

  private async listen(): Promise<void> {
    this.server = createServer();
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.issuer = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    this.provider = new Provider(this.issuer, this.configuration());
    this.server.on('request', this.provider.callback());
  }

  private configuration(): Configuration {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const jwk = { ...privateKey.export({ format: 'jwk' }), kid: randomBytes(6).toString('hex'), use: 'sig', alg: 'RS256' };
    const accounts = this.accounts;
    return {
      clients: this.options.clients.map((c) => ({
        client_id: c.clientId,
        client_secret: c.clientSecret,
        redirect_uris: c.redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
      })),
      jwks: { keys: [jwk as never] },
      cookies: { keys: [randomBytes(16).toString('hex')] },
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
      scopes: ['openid', 'email', 'profile', 'groups'],
      conformIdTokenClaims: !this.options.claimsInIdToken,
      ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600, AuthorizationCode: 60 },
      features: { devInteractions: { enabled: true } },
      findAccount: (_ctx, sub) => {
        const account = accounts[sub];
        if (!account) return undefined;
        return {
          accountId: sub,
          claims: () => ({
            sub,
            ...(account.email !== undefined ? { email: account.email, email_verified: account.emailVerified ?? true } : {}),
            ...(account.groups !== undefined ? { groups: account.groups } : {}),
            ...(account.name !== undefined ? { name: account.name } : {}),
          }),
        };
      },
      // No consent screen: the client gets whatever OIDC scopes and claims it asked for.
      loadExistingGrant: async (ctx: KoaContextWithOIDC) => {
        const accountId = ctx.oidc.session?.accountId;
        const clientId = ctx.oidc.client?.clientId;
        if (!accountId || !clientId) return undefined;
        const grant = new ctx.oidc.provider.Grant({ clientId, accountId });
        grant.addOIDCScope('openid email profile groups');
        grant.addOIDCClaims(['email', 'email_verified', 'groups', 'name']);
        await grant.save();
        return grant;
      },
    };
  }

  /** A browser logs `accountId` in; the URL the server redirects back to (code, state, iss). */
  login(authorizeUrl: string, accountId: string): Promise<URL> {
    return new OidcProviderBrowser(this.issuer).login(authorizeUrl, accountId);
  }

  /** A browser whose user cancels at the login form: the callback carries error=access_denied. */
  deny(authorizeUrl: string): Promise<URL> {
    return new OidcProviderBrowser(this.issuer).deny(authorizeUrl);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * oidc-provider announces its development defaults (dev interactions, runtime) on the console at
 * every start; in a test run that is noise around every test file, so its lines are dropped.
 */
let quieted = false;
function quietNotices(): void {
  if (quieted) return;
  quieted = true;
  for (const level of ['info', 'warn'] as const) {
    const original = console[level].bind(console);
    console[level] = (...args: unknown[]) => {
      if (typeof args[0] === 'string' && /oidc-provider (NOTICE|WARNING)|Unsupported runtime/.test(args[0])) return;
      original(...args);
    };
  }
}
