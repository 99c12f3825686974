import { PASSWORD } from './factories';

/**
 * A person at the service's hosted sign-in and consent pages, over plain HTTP (test/browser drives
 * the same pages in Chromium): follows redirects, carries cookies, signs in with e-mail and
 * password, reads the consent page and approves (or denies) for an organization, and returns the
 * URL the authorization server finally sends the browser to outside itself (the client's
 * redirect URI with code, state and iss) with the consent page's text.
 */
export interface PersonAnswer {
  url: URL;
  /** The consent page's HTML, when one was shown. */
  consent: string | null;
}

export interface PersonChoices {
  email: string;
  password?: string;
  /** The organization to authorize for (the first offered when not given). */
  organizationId?: string;
  decision?: 'approve' | 'deny';
}

export async function authorizeAsPerson(base: string, authorizeUrl: string, choices: PersonChoices): Promise<PersonAnswer> {
  const jar = new Map<string, string>();
  let consent: string | null = null;
  let res = await step(authorizeUrl, jar);
  for (let hops = 0; hops < 20; hops++) {
    const location = res.headers.get('location');
    if (location) {
      const next = new URL(location, base);
      if (next.origin !== base) return { url: next, consent };
      res = await step(next.href, jar);
      continue;
    }
    const page = await res.text();
    if (res.status !== 200) throw new Error(`the service answered ${res.status}: ${page.slice(0, 500)}`);
    const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1];
    const signIn = /action="([^"]+\/sign-in)"/.exec(page)?.[1];
    const consentAction = /action="([^"]+\/consent)"/.exec(page)?.[1];
    if (signIn && csrf) {
      res = await step(new URL(signIn, base).href, jar, new URLSearchParams({ csrf, email: choices.email, password: choices.password ?? PASSWORD }));
    } else if (consentAction && csrf) {
      consent = page;
      const offered = /name="organizationId" value="([^"]+)"/.exec(page)?.[1];
      const form = new URLSearchParams({ csrf, decision: choices.decision ?? 'approve' });
      const organizationId = choices.organizationId ?? offered;
      if (!organizationId && form.get('decision') === 'approve') throw new Error(`no organization to choose: ${pageText(page)}`);
      if (organizationId) form.set('organizationId', organizationId);
      res = await step(new URL(consentAction, base).href, jar, form);
    } else {
      throw new Error(`a page with no form to go on: ${page.slice(0, 500)}`);
    }
  }
  throw new Error('too many redirects at the service');
}

/** One request without following redirects, carrying and collecting cookies. */
async function step(url: string, jar: Map<string, string>, body?: URLSearchParams): Promise<Response> {
  const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
  const res = await fetch(url, { method: body ? 'POST' : 'GET', body, redirect: 'manual', headers: cookie ? { cookie } : {} });
  for (const line of res.headers.getSetCookie()) {
    const [pair] = line.split(';');
    const eq = pair!.indexOf('=');
    const name = pair!.slice(0, eq);
    const value = pair!.slice(eq + 1);
    if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) jar.delete(name);
    else jar.set(name, value);
  }
  return res;
}

/** The consent page's visible text, roughly (tags dropped, entities of the escaper undone). */
export function pageText(html: string): string {
  return html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ');
}
