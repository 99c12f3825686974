import { PERMISSION_CATALOGUE, type Permission } from '../access/permissions';
import type { ConsentClient, OrganizationChoice } from '../authorizations/service';
import { AppError, Forbidden } from '../lib/errors';
import { html, page, type Html } from '../pages/layout';
import { OFFLINE_ACCESS } from './resources';
import { INTERACTION_PATH } from './interaction-path';

/**
 * The HTML of the sign-in, second-factor and consent pages (./interactions.ts answers with them;
 * docs/oauth.md#sign-in-and-consent-authorization-code). Everything a client or organization wrote is escaped
 * by `html`; the layout and its headers are the hosted pages' (src/pages/layout.ts).
 */

/** What consent shows and grants. */
export interface ConsentView {
  client: ConsentClient;
  registeredBy: string | null;
  scopes: string[];
  resource: string;
  /** Where the code flow's answer goes; null for the device flow (the device polls for it). */
  redirectHost: string | null;
  /** The device flow's user code, shown again so the person can match it with the device. */
  userCode: string | null;
  choices: OrganizationChoice[];
}

const errorLine = (error: string | undefined): Html | null => (error ? html`<p class="error" role="alert">${error}</p>` : null);

/** A sign-in refusal of the API in words for a person on this page (the API's message may name an API route). */
export function signInRefusal(err: AppError): string {
  if (err instanceof Forbidden && err.reason === 'sso_required') {
    return 'Your organization requires single sign-on for this e-mail address. This page cannot sign you in through your identity provider yet, so you cannot authorize an application with this address here.';
  }
  return err.message;
}

export function messagePage(title: string, line: string, productName: string): string {
  return page(title, html`<h1>${title}</h1><p class="error" role="alert">${line}</p>`, productName);
}

export function signInPage(p: { uid: string; csrf: string; productName: string; email?: string; error?: string }): string {
  return page(
    'Sign in',
    html`<h1>Sign in to ${p.productName}</h1>
<p>An application asks to act for you. Sign in first; you will see what it asks before anything is shared.</p>
${errorLine(p.error)}
<form method="post" action="${INTERACTION_PATH}/${p.uid}/sign-in">
<input type="hidden" name="csrf" value="${p.csrf}">
<label for="email">E-mail</label>
<input id="email" name="email" type="email" required maxlength="320" autocomplete="username" value="${p.email ?? ''}">
<label for="password">Password</label>
<input id="password" name="password" type="password" required maxlength="256" autocomplete="current-password">
<button type="submit">Sign in</button>
</form>`,
    p.productName,
  );
}

export function secondFactorPage(p: { uid: string; csrf: string; productName: string; challenge: string; error?: string }): string {
  return page(
    'Second factor',
    html`<h1>Confirm it is you</h1>
<p>Enter the 6-digit code of your authenticator app, or one of your recovery codes.</p>
${errorLine(p.error)}
<form method="post" action="${INTERACTION_PATH}/${p.uid}/second-factor">
<input type="hidden" name="csrf" value="${p.csrf}">
<input type="hidden" name="challenge" value="${p.challenge}">
<label for="code">Code</label>
<input id="code" name="code" type="text" required maxlength="64" inputmode="numeric" autocomplete="one-time-code">
<button type="submit">Continue</button>
</form>`,
    p.productName,
  );
}

const SCOPE_WORDS: Record<string, string> = { [OFFLINE_ACCESS]: 'Keep access while you are away (it can renew its access without asking you again).' };

function scopeWords(scope: string): string {
  return SCOPE_WORDS[scope] ?? PERMISSION_CATALOGUE[scope as Permission]?.description ?? scope;
}

/** Who vouches for the client's name: an organization that registered it, or nobody (its own claim). */
export function clientOrigin(client: { type: ConsentClient['type']; clientId: string }, registeredBy: string | null, productName: string): Html {
  return client.type === 'organization'
    ? html`<p class="muted">Registered by ${registeredBy ?? 'an organization'}.</p>`
    : client.type === 'dynamic'
      ? html`<p class="muted">This application registered itself (client <strong>${client.clientId}</strong>); its name is its own claim, not checked by ${productName}.</p>`
      : html`<p class="muted">This application describes itself at <strong>${client.clientId}</strong>; its name is its own claim, not checked by ${productName}.</p>`;
}

export function consentPage(p: ConsentView & { uid: string; csrf: string; productName: string; error?: string }): string {
  const open = p.choices.filter((c) => c.refused === null);
  const closed = p.choices.filter((c) => c.refused !== null);
  const choices =
    open.length === 0
      ? html`<p class="error" role="alert">None of your organizations can authorize this application.</p>`
      : html`<fieldset><legend>For which organization</legend>${open.map(
          (c, i) => html`<div class="choice"><input type="radio" id="org-${c.organizationId}" name="organizationId" value="${c.organizationId}"${i === 0 ? html` checked` : null} required><label for="org-${c.organizationId}">${c.name}</label></div>`,
        )}</fieldset>`;
  const refused = closed.length ? html`<p class="muted">Not available: ${closed.map((c, i) => html`${i ? '; ' : ''}${c.name} (${c.refused})`)}</p>` : null;
  const destination =
    p.redirectHost !== null
      ? html`<p>It will receive your answer at <strong>${p.redirectHost}</strong>.</p>`
      : html`<p>It will act from the device that shows the code <strong>${p.userCode ?? ''}</strong>.</p>`;
  return page(
    'Authorize',
    html`<h1>${p.client.name} wants to act for you</h1>
${clientOrigin(p.client, p.registeredBy, p.productName)}
${destination}
${errorLine(p.error)}
<p>It asks to:</p>
<ul>${p.scopes.map((s) => html`<li>${scopeWords(s)}</li>`)}</ul>
<form method="post" action="${INTERACTION_PATH}/${p.uid}/consent">
<input type="hidden" name="csrf" value="${p.csrf}">
${choices}
${refused}
${open.length ? html`<button type="submit" name="decision" value="approve">Allow</button>` : null}
<button type="submit" name="decision" value="deny" class="secondary" formnovalidate>Deny</button>
</form>`,
    p.productName,
  );
}
