import { CodedError, Invalid } from '../lib/errors';
import { LINK_PATHS } from '../mail/templates';
import { acceptAsNewAccount, previewInvitation } from '../invitations/acceptance';
import { html, messagePage, page, problemText, type Html } from './layout';
import type { PageContext, PageResult } from './router';

/**
 * /accept-invitation?token=… (docs/people-and-roles.md#invitations): what the invitation offers, and a form that
 * creates the invitee's account (name, password) and joins the organization, as
 * POST /v1/invitations/accept does without a session.
 */
type Preview = Awaited<ReturnType<typeof previewInvitation>>;

function deadLink(ctx: PageContext): PageResult {
  return {
    status: 400,
    html: messagePage('This invitation cannot be used', 'error', ['This invitation link is invalid, already used or expired.', 'Ask the person who invited you to send it again.'], ctx.productName),
  };
}

async function preview(ctx: PageContext, token: string): Promise<Preview | null> {
  if (!token || token.length > 512) return null;
  try {
    return await previewInvitation(ctx.deps, token, ctx.ip);
  } catch (err) {
    if (err instanceof CodedError && err.code === 'invalid_token') return null;
    throw err;
  }
}

function form(ctx: PageContext, p: Preview, token: string, values: { name?: string; error?: string }): string {
  const who = p.inviter.name ? html`${p.inviter.name} invited you` : html`You are invited`;
  const error: Html | null = values.error ? html`<p class="error" role="alert">${values.error}</p>` : null;
  return page(
    `Join ${p.organization.name}`,
    html`<h1>Join ${p.organization.name}</h1>
<p>${who} to join <strong>${p.organization.name}</strong> as ${p.role}.</p>
${error}
<form method="post" action="${LINK_PATHS.acceptInvitation}">
<input type="hidden" name="token" value="${token}">
<label for="email">E-mail</label>
<input id="email" type="email" value="${p.email}" readonly autocomplete="username">
<label for="name">Your name</label>
<input id="name" name="name" type="text" required maxlength="255" autocomplete="name" value="${values.name ?? ''}">
<label for="password">Choose a password</label>
<input id="password" name="password" type="password" required minlength="8" maxlength="256" autocomplete="new-password">
<button type="submit">Create my account and join</button>
</form>
<p class="muted">The invitation expires on ${new Date(p.expiresAt).toUTCString()}. If you already have an account with this address, sign in to the application and accept the invitation there.</p>`,
    ctx.productName,
  );
}

export async function acceptInvitationPage(ctx: PageContext, input: Record<string, string>): Promise<PageResult> {
  const token = input.token ?? '';
  const p = await preview(ctx, token);
  return p ? { status: 200, html: form(ctx, p, token, {}) } : deadLink(ctx);
}

export async function submitAcceptInvitation(ctx: PageContext, input: Record<string, string>): Promise<PageResult> {
  const token = input.token ?? '';
  const name = (input.name ?? '').trim();
  const password = input.password ?? '';
  const p = await preview(ctx, token);
  if (!p) return deadLink(ctx);
  const again = (error: string, status = 400): PageResult => ({ status, html: form(ctx, p, token, { name, error }) });
  if (!name || name.length > 255) return again('Enter your name (up to 255 characters).');
  if (password.length < 8 || password.length > 256) return again('Choose a password of 8 to 256 characters.');
  try {
    await acceptAsNewAccount(ctx.deps, { token, name, password }, { ip: ctx.ip, userAgent: ctx.userAgent });
  } catch (err) {
    if (err instanceof Invalid) return again(problemText(err));
    if (err instanceof CodedError && err.code === 'email_taken') {
      return {
        status: 409,
        html: messagePage('You already have an account', 'error', [`An account with ${p.email} already exists.`, `Sign in with it, then accept the invitation to ${p.organization.name} from the application.`], ctx.productName),
      };
    }
    throw err;
  }
  return {
    status: 200,
    html: messagePage(`Welcome to ${p.organization.name}`, 'ok', [`Your account is ready: you joined ${p.organization.name} as ${p.role}.`, `Sign in to the application as ${p.email} with the password you chose.`], ctx.productName),
  };
}
