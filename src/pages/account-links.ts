import { CodedError, Invalid } from '../lib/errors';
import { LINK_PATHS } from '../mail/templates';
import { verifyEmail } from '../auth/verification';
import { confirmPasswordReset } from '../auth/passwords';
import { confirmEmailChange } from '../account/email-change';
import { declineSignUp } from '../account/deletion';
import { findUser, peekAccountToken, type TokenPurpose } from '../users/service';
import { html, messagePage, page, problemText, type Html } from './layout';
import type { PageContext, PageResult } from './router';

/**
 * /verify-email, /reset-password and /confirm-email-change (docs/accounts.md): the
 * page checks the link's token without using it, shows one button (a mail scanner that fetches
 * the link proves nothing) or the new-password form, and its POST calls what
 * POST /v1/auth/verify-email, /v1/auth/password-reset/confirm and /v1/auth/confirm-email-change call.
 */
function deadLink(ctx: PageContext, what: string): PageResult {
  return { status: 400, html: messagePage('This link cannot be used', 'error', ['This link is invalid, already used or expired.', what], ctx.productName) };
}

/** The address a pending token of `purpose` was sent to, or null when the token is dead. */
async function addressOf(ctx: PageContext, purpose: TokenPurpose, token: string): Promise<string | null> {
  if (!token || token.length > 512) return null;
  const pending = await peekAccountToken(ctx.deps.db, purpose, token, ctx.deps.clock.now());
  if (!pending) return null;
  return (await findUser(ctx.deps.db, pending.userId))?.email ?? null;
}

/** A page whose one button posts the link's token back (what the link is for happens only then). */
function buttonPage(ctx: PageContext, title: string, intro: Html, action: string, token: string, label: string): PageResult {
  return {
    status: 200,
    html: page(
      title,
      html`<h1>${title}</h1>
<p>${intro}</p>
<form method="post" action="${action}">
<input type="hidden" name="token" value="${token}">
<button type="submit">${label}</button>
</form>`,
      ctx.productName,
    ),
  };
}

const isInvalidToken = (err: unknown) => err instanceof CodedError && err.code === 'invalid_token';

const ASK_VERIFY = 'Sign in and ask for a new confirmation message.';
const ASK_RESET = 'Ask for a new password reset link.';
const ASK_DECLINE = 'If an account with your address still exists, ask for a password reset to take it over.';

export async function verifyEmailPage(ctx: PageContext, input: Record<string, string>): Promise<PageResult> {
  const token = input.token ?? '';
  const email = await addressOf(ctx, 'verify_email', token);
  if (!email) return deadLink(ctx, ASK_VERIFY);
  return {
    status: 200,
    html: page(
      'Confirm your e-mail address',
      html`<h1>Confirm your e-mail address</h1>
<p>Confirm that <strong>${email}</strong> is your address.</p>
<p class="muted">Confirming here proves the address, not the password chosen when the account was made: that password is removed and its sessions are signed out, and you choose a password next. (An application that confirms from the session that signed up keeps them.)</p>
<form method="post" action="${LINK_PATHS.verifyEmail}">
<input type="hidden" name="token" value="${token}">
<button type="submit">Confirm my address</button>
</form>
<h2>Did you not sign up?</h2>
<p>Then someone else made an account with your address. Delete it, so the address is yours again.</p>
<form method="post" action="${LINK_PATHS.declineSignUp}">
<input type="hidden" name="token" value="${token}">
<button type="submit">This wasn't me: delete the account</button>
</form>`,
      ctx.productName,
    ),
  };
}

export async function submitVerifyEmail(ctx: PageContext, input: Record<string, string>): Promise<PageResult> {
  try {
    // A page has no session of the account: confirming here secures it (src/auth/verification.ts).
    const { user, passwordResetToken } = await verifyEmail(ctx.deps, input.token ?? '', { sessionUserId: null, resetLink: 'caller' });
    if (passwordResetToken) {
      const intro = html`<p class="ok">${user.email} is confirmed.</p><p>The password chosen when the account was made was removed and its sessions signed out: whoever chose it may not have been you. Choose a password to sign in.</p>`;
      return { status: 200, html: resetForm(ctx, user.email, passwordResetToken, undefined, intro) };
    }
    return { status: 200, html: messagePage('Address confirmed', 'ok', [`${user.email} is confirmed.`, 'You can go back to the application.'], ctx.productName) };
  } catch (err) {
    if (isInvalidToken(err)) return deadLink(ctx, ASK_VERIFY);
    throw err;
  }
}

function resetForm(ctx: PageContext, email: string, token: string, error?: string, intro?: Html): string {
  return page(
    'Choose a new password',
    html`<h1>Choose a new password</h1>
${intro ?? html`<p>Once it is set, every session of the account is signed out.</p>`}
${error ? html`<p class="error" role="alert">${error}</p>` : null}
<form method="post" action="${LINK_PATHS.resetPassword}">
<input type="hidden" name="token" value="${token}">
<label for="email">E-mail</label>
<input id="email" type="email" value="${email}" readonly autocomplete="username">
<label for="password">New password</label>
<input id="password" name="password" type="password" required minlength="8" maxlength="256" autocomplete="new-password">
<button type="submit">Set the new password</button>
</form>`,
    ctx.productName,
  );
}

export async function resetPasswordPage(ctx: PageContext, input: Record<string, string>): Promise<PageResult> {
  const token = input.token ?? '';
  const email = await addressOf(ctx, 'password_reset', token);
  return email ? { status: 200, html: resetForm(ctx, email, token) } : deadLink(ctx, ASK_RESET);
}

export async function submitResetPassword(ctx: PageContext, input: Record<string, string>): Promise<PageResult> {
  const token = input.token ?? '';
  const password = input.password ?? '';
  const email = await addressOf(ctx, 'password_reset', token);
  if (!email) return deadLink(ctx, ASK_RESET);
  if (password.length < 8 || password.length > 256) return { status: 400, html: resetForm(ctx, email, token, 'Choose a password of 8 to 256 characters.') };
  try {
    await confirmPasswordReset(ctx.deps, { token, password });
  } catch (err) {
    if (err instanceof Invalid) return { status: 400, html: resetForm(ctx, email, token, problemText(err)) };
    if (isInvalidToken(err)) return deadLink(ctx, ASK_RESET);
    throw err;
  }
  return { status: 200, html: messagePage('Password changed', 'ok', ['Your new password is set, and every session of the account was signed out.', `Sign in to the application as ${email} with it.`], ctx.productName) };
}

const ASK_CHANGE = 'Sign in and ask for the change again.';

export async function confirmEmailChangePage(ctx: PageContext, input: Record<string, string>): Promise<PageResult> {
  const token = input.token ?? '';
  const pending = token && token.length <= 512 ? await peekAccountToken(ctx.deps.db, 'email_change', token, ctx.deps.clock.now()) : null;
  const user = pending?.newEmail ? await findUser(ctx.deps.db, pending.userId) : undefined;
  if (!pending?.newEmail || !user) return deadLink(ctx, ASK_CHANGE);
  return buttonPage(
    ctx,
    'Confirm your new e-mail address',
    html`Your account's address changes from <strong>${user.email}</strong> to <strong>${pending.newEmail}</strong>. You sign in with the new one from then on.`,
    LINK_PATHS.confirmEmailChange,
    token,
    'Change my address',
  );
}

export async function submitConfirmEmailChange(ctx: PageContext, input: Record<string, string>): Promise<PageResult> {
  try {
    const user = await confirmEmailChange(ctx.deps, input.token ?? '');
    return { status: 200, html: messagePage('Address changed', 'ok', [`Your account's address is now ${user.email}.`, 'Sign in to the application with it.'], ctx.productName) };
  } catch (err) {
    if (isInvalidToken(err)) return deadLink(ctx, ASK_CHANGE);
    if (err instanceof CodedError && err.code === 'email_taken') {
      return { status: 409, html: messagePage('That address is taken', 'error', ['Another account has used this address since you asked for the change.', 'Your address stays as it was.'], ctx.productName) };
    }
    throw err;
  }
}

/** /not-my-account: the verification message's "this wasn't me" link (the same token). */
export async function declineSignUpPage(ctx: PageContext, input: Record<string, string>): Promise<PageResult> {
  const token = input.token ?? '';
  const email = await addressOf(ctx, 'verify_email', token);
  if (!email) return deadLink(ctx, ASK_DECLINE);
  return buttonPage(
    ctx,
    'Not your account?',
    html`Someone made an account with <strong>${email}</strong> and this message came to confirm it. If it was not you, delete that account: its sessions end and the address is free again.`,
    LINK_PATHS.declineSignUp,
    token,
    'Delete the account',
  );
}

export async function submitDeclineSignUp(ctx: PageContext, input: Record<string, string>): Promise<PageResult> {
  try {
    const { deleted } = await declineSignUp(ctx.deps, input.token ?? '');
    const lines = deleted
      ? ['The account made with your address is deleted, and its sessions are signed out.', 'Nothing else is needed; you can sign up with the address yourself whenever you like.']
      : ['The account made with your address owns an organization, so it was not deleted: its password was removed and every session, API key and link of it ended.', 'The account is yours now: choose a password with "Forgot password" to sign in and decide what to keep.'];
    return { status: 200, html: messagePage(deleted ? 'Account deleted' : 'Account secured', 'ok', lines, ctx.productName) };
  } catch (err) {
    if (isInvalidToken(err)) return deadLink(ctx, ASK_DECLINE);
    if (err instanceof CodedError && err.code === 'already_verified') {
      return { status: 409, html: messagePage('This address is confirmed', 'error', ['The address was confirmed meanwhile, so the account is not deleted.', 'If that was not you, reset the password of the account with "Forgot password".'], ctx.productName) };
    }
    throw err;
  }
}
