import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local OAuth 2 authorization server speaking authorization code + PKCE (RFC 6749, RFC 7636):
 * `GET …/authorize` redirects back with a code (as if the user consented), `POST …/token`
 * exchanges a code (checking client, redirect URI and the S256 verifier) or a refresh token.
 * With `tenantPaths` the endpoints are the identity platform v2's `/{tenant}/oauth2/v2.0/…`.
 */
export interface FakeOAuthOptions {
  clientId: string;
  clientSecret?: string;
  tenantPaths?: boolean;
  /** Seconds in `expires_in` of every token reply. */
  expiresIn?: number;
  /** RFC 9207: add `iss` (this server's issuer) to every authorization response. */
  sendIss?: boolean;
}

interface IssuedCode {
  clientId: string;
  redirectUri: string;
  challenge: string;
  method: string;
  scope: string;
  tenant: string | null;
}

export interface TokenRequestRecord {
  tenant: string | null;
  params: Record<string, string>;
}

export class FakeOAuthServer {
  private server!: Server;
  baseUrl = '';
  private readonly codes = new Map<string, IssuedCode>();
  private readonly refreshTokens = new Set<string>();
  /** Access tokens this server issued and that are still valid (the resource fake checks them). */
  readonly validAccessTokens = new Set<string>();
  /** Every token and secret it handed out or was given, for "never stored in plain text" checks. */
  readonly issuedSecrets: string[] = [];
  readonly tokenRequests: TokenRequestRecord[] = [];
  readonly authorizeRequests: URL[] = [];
  /** When set, the next token request answers this instead. */
  failNextToken: { status: number; body: unknown } | null = null;
  /** When set, every refresh_token grant answers this. */
  failRefresh: { status: number; body: unknown } | null = null;
  /** When set, the next authorization redirects back with this error instead of a code (as a refused consent does). */
  denyNext: { error: string; error_description?: string } | null = null;
  /** When set, the `iss` sent instead of the real issuer (a mix-up attack). */
  issOverride: string | null = null;
  /** A refresh answers this much later (the refresh token is spent at once, as a rotating server does). */
  refreshDelayMs = 0;

  constructor(private readonly options: FakeOAuthOptions) {
    if (options.clientSecret) this.issuedSecrets.push(options.clientSecret);
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch(() => {
        res.statusCode = 500;
        res.end();
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.baseUrl = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** The authorization URL's endpoint for a tenant (or the plain one). */
  authorizeEndpoint(tenant?: string): string {
    return this.options.tenantPaths ? `${this.baseUrl}/${tenant}/oauth2/v2.0/authorize` : `${this.baseUrl}/authorize`;
  }

  tokenEndpoint(tenant?: string): string {
    return this.options.tenantPaths ? `${this.baseUrl}/${tenant}/oauth2/v2.0/token` : `${this.baseUrl}/token`;
  }

  /** Invalidates every access token (as if revoked), keeping refresh tokens. */
  revokeAccessTokens(): void {
    this.validAccessTokens.clear();
  }

  /** The issuer identifier: the identity platform's `{base}/{tenant}/v2.0`, else the base URL. */
  issuer(tenant: string | null): string {
    return this.options.tenantPaths ? `${this.baseUrl}/${tenant}/v2.0` : this.baseUrl;
  }

  private route(pathname: string): { tenant: string | null; endpoint: string } | null {
    const match = this.options.tenantPaths ? /^\/([^/]+)\/oauth2\/v2\.0\/(authorize|token)$/.exec(pathname) : /^\/()(authorize|token)$/.exec(pathname);
    return match ? { tenant: match[1] || null, endpoint: match[2]! } : null;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.baseUrl);
    const route = this.route(url.pathname);
    if (!route) return json(res, 404, { error: 'not_found' });
    if (route.endpoint === 'authorize' && req.method === 'GET') return this.authorize(url, route.tenant, res);
    if (route.endpoint === 'token' && req.method === 'POST') return this.token(await readBody(req), route.tenant, req, res);
    return json(res, 405, { error: 'method_not_allowed' });
  }

  /** Consent granted at once: 302 to the redirect URI with a code and the same state. */
  private authorize(url: URL, tenant: string | null, res: ServerResponse): void {
    this.authorizeRequests.push(url);
    const q = url.searchParams;
    const redirectUri = q.get('redirect_uri');
    if (q.get('response_type') !== 'code' || q.get('client_id') !== this.options.clientId || !redirectUri || !q.get('code_challenge')) {
      return json(res, 400, { error: 'invalid_request' });
    }
    const back = new URL(redirectUri);
    // What real servers add: the identity platform always sends session_state; RFC 9207 servers iss.
    const extras = (): void => {
      if (this.options.tenantPaths) back.searchParams.set('session_state', randomUUID());
      if (this.options.sendIss || this.issOverride) back.searchParams.set('iss', this.issOverride ?? this.issuer(tenant));
    };
    if (this.denyNext) {
      back.searchParams.set('error', this.denyNext.error);
      if (this.denyNext.error_description) back.searchParams.set('error_description', this.denyNext.error_description);
      back.searchParams.set('state', q.get('state') ?? '');
      extras();
      this.denyNext = null;
      res.writeHead(302, { location: back.toString() });
      res.end();
      return;
    }
    const code = `code_${randomBytes(12).toString('hex')}`;
    this.codes.set(code, {
      clientId: q.get('client_id')!,
      redirectUri,
      challenge: q.get('code_challenge')!,
      method: q.get('code_challenge_method') ?? 'plain',
      scope: q.get('scope') ?? '',
      tenant,
    });
    back.searchParams.set('code', code);
    back.searchParams.set('state', q.get('state') ?? '');
    extras();
    res.writeHead(302, { location: back.toString() });
    res.end();
  }

  private token(body: string, tenant: string | null, req: IncomingMessage, res: ServerResponse): void {
    const contentType = req.headers['content-type'] ?? '';
    const params = Object.fromEntries(new URLSearchParams(body));
    this.tokenRequests.push({ tenant, params });
    if (!contentType.startsWith('application/x-www-form-urlencoded')) return json(res, 400, { error: 'invalid_request' });
    if (this.failNextToken) {
      const fail = this.failNextToken;
      this.failNextToken = null;
      return json(res, fail.status, fail.body);
    }
    if (params.client_id !== this.options.clientId || (this.options.clientSecret && params.client_secret !== this.options.clientSecret)) {
      return json(res, 401, { error: 'invalid_client' });
    }
    if (params.grant_type === 'authorization_code') {
      const issued = params.code ? this.codes.get(params.code) : undefined;
      if (!issued) return json(res, 400, { error: 'invalid_grant', error_description: 'unknown or used code' });
      this.codes.delete(params.code!);
      const verifier = params.code_verifier ?? '';
      const expected = issued.method === 'S256' ? createHash('sha256').update(verifier).digest('base64url') : verifier;
      if (issued.redirectUri !== params.redirect_uri || expected !== issued.challenge || issued.tenant !== tenant) {
        return json(res, 400, { error: 'invalid_grant', error_description: 'PKCE or redirect mismatch' });
      }
      return json(res, 200, this.issue(issued.scope));
    }
    if (params.grant_type === 'refresh_token') {
      if (this.failRefresh) return json(res, this.failRefresh.status, this.failRefresh.body);
      if (!params.refresh_token || !this.refreshTokens.has(params.refresh_token)) return json(res, 400, { error: 'invalid_grant' });
      this.refreshTokens.delete(params.refresh_token);
      const issued = this.issue(params.scope ?? '');
      if (this.refreshDelayMs > 0) {
        setTimeout(() => json(res, 200, issued), this.refreshDelayMs);
        return;
      }
      return json(res, 200, issued);
    }
    return json(res, 400, { error: 'unsupported_grant_type' });
  }

  private issue(scope: string) {
    const accessToken = `at_${randomBytes(16).toString('hex')}`;
    const refreshToken = `rt_${randomBytes(16).toString('hex')}`;
    this.validAccessTokens.add(accessToken);
    this.refreshTokens.add(refreshToken);
    this.issuedSecrets.push(accessToken, refreshToken);
    return { token_type: 'Bearer', access_token: accessToken, refresh_token: refreshToken, expires_in: this.options.expiresIn ?? 3600, scope };
  }
}

export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}
