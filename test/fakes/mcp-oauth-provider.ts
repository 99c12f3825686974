import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OidcProviderBrowser } from './oidc-provider-browser';
import Provider, { type Configuration, type KoaContextWithOIDC } from 'oidc-provider';

/**
 * A real OAuth 2 authorization server (panva's certified oidc-provider) in-process on 127.0.0.1,
 * for the generic OAuth flow of MCP connections. It behaves as it does in production: PKCE
 * required for public clients, `iss` in every authorization response (RFC 9207), RFC 8414 /
 * OpenID discovery, refresh tokens rotated on every use (a spent one is refused and revokes the
 * family). Consent is skipped (every client gets the scopes it asks for); a "browser" logs in
 * through the development login form. It prints "Unsupported runtime" on Node 20; the flow works.
 */
export interface McpAuthClient {
  clientId: string;
  /** Absent: a public client (token_endpoint_auth_method none), whose refresh tokens rotate by default. */
  clientSecret?: string;
  redirectUris: string[];
}

export interface McpAuthServerOptions {
  clients: McpAuthClient[];
  /** Lifetime of access tokens, in seconds (their `expires_in`). */
  accessTokenTtl?: number;
}

/** The scopes an MCP server's clients ask for, besides OpenID's. */
export const MCP_SCOPES = ['tools.read', 'tools.call'];

export interface GrantRecord {
  grantType: string;
  clientId: string;
}

export class McpAuthServer {
  issuer = '';
  /** Every successful token grant, in order (authorization_code, refresh_token). */
  readonly grants: GrantRecord[] = [];
  /** Every refresh token the server handed out, in order (for "the rotated one is stored"). */
  readonly issuedRefreshTokens: string[] = [];
  private server!: Server;
  private provider!: Provider;

  private constructor(private readonly options: McpAuthServerOptions) {}

  static async start(options: McpAuthServerOptions): Promise<McpAuthServer> {
    const as = new McpAuthServer(options);
    await as.listen();
    return as;
  }

  get authorizationEndpoint(): string {
    return `${this.issuer}/auth`;
  }

  get tokenEndpoint(): string {
    return `${this.issuer}/token`;
  }

  private async listen(): Promise<void> {
    this.server = createServer();
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.issuer = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    this.provider = new Provider(this.issuer, this.configuration());
    this.provider.on('grant.success', (ctx: KoaContextWithOIDC) => {
      const body = ctx.body as { refresh_token?: string } | undefined;
      if (body?.refresh_token) this.issuedRefreshTokens.push(body.refresh_token);
      this.grants.push({ grantType: String(ctx.oidc.params?.grant_type), clientId: ctx.oidc.client?.clientId ?? '' });
    });
    this.server.on('request', this.provider.callback());
  }

  private configuration(): Configuration {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const jwk = { ...privateKey.export({ format: 'jwk' }), kid: randomBytes(6).toString('hex'), use: 'sig', alg: 'RS256' };
    return {
      clients: this.options.clients.map((c) => ({
        client_id: c.clientId,
        ...(c.clientSecret ? { client_secret: c.clientSecret, token_endpoint_auth_method: 'client_secret_post' } : { token_endpoint_auth_method: 'none' }),
        redirect_uris: c.redirectUris,
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
      })),
      jwks: { keys: [jwk as never] },
      cookies: { keys: [randomBytes(16).toString('hex')] },
      scopes: ['openid', 'offline_access', ...MCP_SCOPES],
      ttl: { AccessToken: this.options.accessTokenTtl ?? 3600, Interaction: 600, Session: 3600, Grant: 3600, RefreshToken: 14 * 86_400 },
      features: { devInteractions: { enabled: true } },
      // An MCP client asks for tool scopes, not offline_access: refresh tokens for every client
      // allowed the grant, rotated on every use (the default rotates only public clients').
      issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
      rotateRefreshToken: () => true,
      findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
      // No consent screen: the client gets whatever scopes it asked for.
      loadExistingGrant: async (ctx: KoaContextWithOIDC) => {
        const accountId = ctx.oidc.session?.accountId;
        const clientId = ctx.oidc.client?.clientId;
        if (!accountId || !clientId) return undefined;
        const grant = new ctx.oidc.provider.Grant({ clientId, accountId });
        grant.addOIDCScope(['openid', 'offline_access', ...MCP_SCOPES].join(' '));
        await grant.save();
        return grant;
      },
    };
  }

  /** Whether the server would still accept this refresh token (not spent, not revoked). */
  async refreshTokenIsActive(value: string): Promise<boolean> {
    const token = await this.provider.RefreshToken.find(value);
    return token !== undefined && !token.consumed && !token.isExpired;
  }

  /** A browser logs `accountId` in; the URL the server redirects back to (code, state, iss). */
  login(authorizeUrl: string, accountId = 'member-1'): Promise<URL> {
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
