import type { Client, KoaContextWithOIDC } from 'oidc-provider';
import type { Db } from '../db/schema';
import { html, page, PAGE_HEADERS, type Html } from '../pages/layout';
import type { ClientKind } from './clients';
import { clientOrigin } from './interaction-pages';
import { CODE_NOT_FOUND } from './device-guesses';

/**
 * The device flow's own pages (RFC 8628 §3.3; docs/oauth.md#device-flow), rendered by oidc-provider's
 * `deviceFlow` hooks at its `/oauth/device` route: the person enters the code the device shows,
 * confirms it against the client, then goes through the same sign-in and consent pages as the
 * code flow (./interactions.ts), and lands on the success page. Hosted pages' rules
 * (src/pages/layout.ts): no script, `frame-ancestors 'none'`, labelled fields, forms that work
 * without JavaScript.
 *
 * CSRF: each form carries the library's token (`xsrf`), a random secret it keeps in its session
 * (the browser's session cookie) and compares in constant time on the POST. A missing or wrong one
 * comes back here as an `invalid_request`, which the input page shows as an expired form.
 */
export const DEVICE_PATH = '/oauth/device';

/** A user code as the device shows it (the library stores it without the dash). */
export function formatUserCode(normalized: string): string {
  return normalized.length === 8 ? `${normalized.slice(0, 4)}-${normalized.slice(4)}` : normalized;
}

/** The query's user_code of `verification_uri_complete`, kept for the input page (see `prefillFromLink`). */
const PREFILL = 'deviceUserCodeFromLink';

/**
 * `verification_uri_complete` opens the input page with the code filled in: the library would
 * answer it with a self-submitting form (a script), so the code is taken out of the query before
 * the library reads it and the person submits it, then confirms it against the device.
 */
export async function prefillFromLink(ctx: KoaContextWithOIDC, next: () => Promise<void>): Promise<void> {
  if (ctx.method === 'GET' && ctx.path === '/device' && typeof ctx.query.user_code === 'string') {
    ctx.state[PREFILL] = ctx.query.user_code.slice(0, 32);
    ctx.query = Object.fromEntries(Object.entries(ctx.query).filter(([k]) => k !== 'user_code'));
  }
  await next();
}

function send(ctx: KoaContextWithOIDC, body: string) {
  ctx.set(PAGE_HEADERS);
  ctx.type = 'html';
  ctx.body = body;
}

const xsrfOf = (ctx: KoaContextWithOIDC) => String((ctx.oidc.session?.state as { secret?: string } | undefined)?.secret ?? '');

/** What the input page says after the library refused a code or a form. */
function refusal(err: Error | undefined, out: { error?: string } | undefined): string | null {
  if (!err) return null;
  switch (err.name) {
    case 'NoCodeError':
      return 'Enter the code your device shows.';
    case 'NotFoundError':
      return 'This code is not one we issued. Check it against your device and enter it again.';
    case 'ExpiredError':
      return 'This code has expired. Start again on your device to get a new one.';
    case 'AlreadyUsedError':
      return 'This code was already used. Start again on your device to get a new one.';
    case 'AbortedError':
      return 'The request was cancelled; the device gets no access.';
    default:
      return out?.error === 'invalid_request' ? 'The form expired. Enter the code again.' : 'Something went wrong. Enter the code again.';
  }
}

export function devicePages(db: Db, productName: string) {
  const errorLine = (line: string | null): Html | null => (line ? html`<p class="error" role="alert">${line}</p>` : null);

  return {
    // The library's DeviceCode keeps this; nothing of the device is shown or needed.
    deviceInfo: () => ({}),

    userCodeInputSource: (ctx: KoaContextWithOIDC, _form: string, out?: { error?: string }, err?: Error) => {
      // The code typed stays in the field when the code was refused, or the form (its token) was.
      const posted = out?.error === 'invalid_request' ? ctx.oidc.params?.user_code : undefined;
      const code = (err as { userCode?: string } | undefined)?.userCode ?? (typeof posted === 'string' ? posted.slice(0, 32) : undefined) ?? (ctx.state[PREFILL] as string | undefined) ?? '';
      // A refused POST that came without the library's session (no cookie: another site's form, or
      // cookies off): no token can be kept for it, so nothing is saved (the library would fail on
      // a session it never stored) and the form asks again by GET, which starts one.
      if (err?.name === 'NotFoundError') ctx.state[CODE_NOT_FOUND] = true;
      const session = ctx.oidc.session as unknown as { exp?: number; touched?: boolean } | undefined;
      const sessionless = err !== undefined && session !== undefined && typeof session.exp !== 'number';
      if (sessionless) session.touched = false;
      const form = sessionless
        ? html`<form method="get" action="${DEVICE_PATH}">`
        : html`<form method="post" action="${DEVICE_PATH}">
<input type="hidden" name="xsrf" value="${xsrfOf(ctx)}">`;
      send(
        ctx,
        page(
          'Connect a device',
          html`<h1>Connect a device</h1>
<p>Enter the code your device or command line shows. You will check what it asks before anything is shared.</p>
${errorLine(refusal(err, out))}
${form}
<label for="user_code">Code</label>
<input id="user_code" class="code" name="user_code" type="text" required maxlength="32" autocomplete="off" autocapitalize="characters" spellcheck="false" placeholder="XXXX-XXXX" value="${code}">
<button type="submit">Continue</button>
</form>`,
          productName,
        ),
      );
    },

    userCodeConfirmSource: async (ctx: KoaContextWithOIDC, _form: string, client: Client, _deviceInfo: unknown, userCode: string) => {
      const metadata = client.metadata() as { client_kind?: ClientKind; organization_id?: string };
      const kind = metadata.client_kind === 'organization' ? 'organization' : 'metadata_document';
      let registeredBy: string | null = null;
      if (kind === 'organization' && metadata.organization_id) {
        registeredBy = (await db.selectFrom('organizations').select('name').where('id', '=', metadata.organization_id).executeTakeFirst())?.name ?? null;
      }
      send(
        ctx,
        page(
          'Check the code',
          html`<h1>Is this your device?</h1>
<p><strong>${client.clientName ?? client.clientId}</strong> asks to connect with the code:</p>
<p class="code"><strong>${userCode}</strong></p>
${clientOrigin({ type: kind, clientId: client.clientId }, registeredBy, productName)}
<p>Continue only if your device shows this same code and you started this yourself. Otherwise cancel: someone may be trying to get access through you.</p>
<form method="post" action="${DEVICE_PATH}">
<input type="hidden" name="xsrf" value="${xsrfOf(ctx)}">
<input type="hidden" name="user_code" value="${userCode}">
<button type="submit" name="confirm" value="yes">Continue</button>
<button type="submit" name="abort" value="yes" class="secondary">Cancel</button>
</form>`,
          productName,
        ),
      );
    },

    successSource: (ctx: KoaContextWithOIDC) => {
      const name = ctx.oidc.client?.clientName ?? ctx.oidc.client?.clientId ?? 'The application';
      send(
        ctx,
        page('Device connected', html`<h1>Device connected</h1><p class="ok" role="status">${name} can now act for you from your device. You can close this page.</p><p class="muted">You can revoke it at any time from your authorized applications.</p>`, productName),
      );
    },
  };
}
