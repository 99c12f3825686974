/**
 * A browser at an in-process oidc-provider (its development interactions): follows redirects,
 * carries cookies, logs an account in at the login form or cancels there, and returns the URL the
 * provider finally redirects to outside itself (the client's callback with code, state, iss).
 * Shared by the fakes built on oidc-provider (SSO identity provider, MCP authorization server).
 */
export class OidcProviderBrowser {
  constructor(private readonly issuer: string) {}

  /** Logs `accountId` in through the development form (any password). */
  async login(authorizeUrl: string, accountId: string): Promise<URL> {
    return this.browse(authorizeUrl, (interaction, jar) =>
      this.step(interaction, jar, { method: 'POST', body: new URLSearchParams({ prompt: 'login', login: accountId, password: 'any' }) }),
    );
  }

  /** The user cancels at the login form: the callback carries error=access_denied. */
  async deny(authorizeUrl: string): Promise<URL> {
    return this.browse(authorizeUrl, (interaction, jar) => this.step(`${interaction}/abort`, jar));
  }

  private async browse(authorizeUrl: string, atLogin: (interaction: string, jar: Map<string, string>) => Promise<Response>): Promise<URL> {
    const jar = new Map<string, string>();
    let res = await this.step(authorizeUrl, jar);
    for (let hops = 0; hops < 10; hops++) {
      const location = res.headers.get('location');
      if (!location) throw new Error(`the provider answered ${res.status} without a redirect: ${(await res.text()).slice(0, 300)}`);
      const next = new URL(location, this.issuer);
      if (next.origin !== this.issuer) return next;
      res = /^\/interaction\/[^/]+$/.test(next.pathname) ? await atLogin(next.href, jar) : await this.step(next.href, jar);
    }
    throw new Error('too many redirects at the provider');
  }

  /** One request without following redirects, carrying and collecting cookies. */
  private async step(url: string, jar: Map<string, string>, init: { method?: string; body?: URLSearchParams } = {}): Promise<Response> {
    const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await fetch(url, { method: init.method ?? 'GET', body: init.body, redirect: 'manual', headers: cookie ? { cookie } : {} });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      jar.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    return res;
  }
}
