/**
 * Every message the service sends, in one place: a subject, a plain-text part and an HTML part
 * (docs/mail.md#what-is-sent). Values from users (names, organization names, addresses) are
 * escaped in the HTML part; links are built from APP_BASE_URL. A subject never carries a link
 * token: it is stored in clear (the admin list shows it to no one, but the row keeps it).
 */
export type MailInput =
  | { kind: 'invitation'; to: string; organizationName: string; inviterName: string | null; role: string; token: string; expiresAt: Date }
  | { kind: 'verify_email'; to: string; token: string }
  /**
   * A reset link. `confirmedElsewhere`: the address was just confirmed outside the account's
   * sessions, which removed the password chosen at sign-up (src/auth/verification.ts).
   */
  | { kind: 'password_reset'; to: string; token: string; confirmedElsewhere?: boolean }
  /** A reset asked for an account that signs in through SSO (no password): how it signs in instead. */
  | { kind: 'password_reset_unavailable'; to: string }
  | { kind: 'password_changed'; to: string }
  | { kind: 'email_change_confirm'; to: string; token: string; newEmail: string }
  /** To the old address when a change to `newEmail` is asked for. */
  | { kind: 'email_change_notice'; to: string; newEmail: string }
  /** To an address that already has an account when another account asks to move to it (instead of a link). */
  | { kind: 'email_change_taken'; to: string }
  /** Any other notice about the account's security (second factors enrolled or used, …). */
  | { kind: 'security_notice'; to: string; title: string; lines: string[] };

export type MailKind = MailInput['kind'];

export interface RenderedMail {
  subject: string;
  text: string;
  html: string;
}

export interface TemplateContext {
  appBaseUrl: string;
  /** The product's name in greetings and subjects (MAIL_FROM's display name). */
  productName: string;
}

/** The paths the links open (served by src/pages/ when APP_BASE_URL is the service itself). */
export const LINK_PATHS = {
  verifyEmail: '/verify-email',
  resetPassword: '/reset-password',
  acceptInvitation: '/accept-invitation',
  confirmEmailChange: '/confirm-email-change',
  /** "This wasn't me": the verification message's second link (the same token). */
  declineSignUp: '/not-my-account',
} as const;

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

/** One paragraph of a message: plain text, or a link shown as a button in HTML and as a bare URL in text. */
type Block = string | { link: string; label: string };

function link(ctx: TemplateContext, path: string, token: string): string {
  return `${ctx.appBaseUrl}${path}?token=${encodeURIComponent(token)}`;
}

/**
 * Messages greet no one by name (docs/mail.md#what-is-sent): an account's name is whatever its
 * holder typed, nobody proves it, and a message may go to an address its owner has not confirmed
 * (a sign-up with someone else's address, an e-mail change). Greeting with it would put a
 * stranger's words ("Visit evil.example to claim…") at the top of a message we send.
 */
const GREETING = 'Hello,';

function build(ctx: TemplateContext, subject: string, blocks: Block[]): RenderedMail {
  const text = blocks.map((b) => (typeof b === 'string' ? b : `${b.label}:\n${b.link}`)).join('\n\n') + `\n\n— ${ctx.productName}\n`;
  const body = blocks
    .map((b) =>
      typeof b === 'string'
        ? `<p style="margin:0 0 16px">${escapeHtml(b)}</p>`
        : `<p style="margin:0 0 16px"><a href="${escapeHtml(b.link)}" style="display:inline-block;padding:10px 18px;background:#1f4fd1;color:#ffffff;text-decoration:none;border-radius:6px">${escapeHtml(b.label)}</a></p>` +
          `<p style="margin:0 0 16px;font-size:12px;color:#555555">Or open this link: ${escapeHtml(b.link)}</p>`,
    )
    .join('\n');
  const html =
    `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(subject)}</title></head>` +
    `<body style="font-family:Helvetica,Arial,sans-serif;font-size:15px;line-height:1.5;color:#1a1a1a;max-width:560px;margin:0 auto;padding:24px">\n` +
    `${body}\n<p style="margin:24px 0 0;color:#555555">— ${escapeHtml(ctx.productName)}</p></body></html>\n`;
  return { subject, text, html };
}

const IGNORE = 'If you did not expect this message, you can ignore it.';

export function renderMail(input: MailInput, ctx: TemplateContext): RenderedMail {
  switch (input.kind) {
    case 'invitation': {
      const who = input.inviterName ? `${input.inviterName} invited you` : 'You are invited';
      return build(ctx, `${who} to join ${input.organizationName}`, [
        GREETING,
        `${who} to join ${input.organizationName} on ${ctx.productName} as ${input.role}.`,
        { link: link(ctx, LINK_PATHS.acceptInvitation, input.token), label: 'Accept the invitation' },
        `The invitation expires on ${input.expiresAt.toUTCString()}. ${IGNORE}`,
      ]);
    }
    case 'verify_email':
      return build(ctx, `Confirm your e-mail address for ${ctx.productName}`, [
        GREETING,
        `Confirm that ${input.to} is your address. The link works once, for 24 hours.`,
        { link: link(ctx, LINK_PATHS.verifyEmail, input.token), label: 'Confirm my address' },
        `Did you not sign up? Then someone else used your address. Delete that account, so the address is yours again:`,
        { link: link(ctx, LINK_PATHS.declineSignUp, input.token), label: 'This wasn\'t me' },
      ]);
    case 'password_reset':
      if (input.confirmedElsewhere) {
        return build(ctx, `Choose your ${ctx.productName} password`, [
          GREETING,
          'Your address is confirmed. It was confirmed outside the session that signed up, so the password chosen at sign-up was removed and its sessions signed out: whoever chose it may not have been you. Choose a password to sign in. The link works once, for 30 minutes.',
          { link: link(ctx, LINK_PATHS.resetPassword, input.token), label: 'Choose a password' },
          'A new link can be asked for at any time with "Forgot password".',
        ]);
      }
      return build(ctx, `Reset your ${ctx.productName} password`, [
        GREETING,
        'Someone asked to reset the password of your account. The link works once, for 30 minutes.',
        { link: link(ctx, LINK_PATHS.resetPassword, input.token), label: 'Choose a new password' },
        `If it was not you, ignore this message: your password stays as it is.`,
      ]);
    case 'password_reset_unavailable':
      return build(ctx, `About your ${ctx.productName} password`, [
        GREETING,
        'Someone asked to reset the password of your account, but it has no password: it signs in through your organization\'s single sign-on.',
        'Sign in with single sign-on instead, or ask your administrator for help.',
      ]);
    case 'password_changed':
      return build(ctx, `Your ${ctx.productName} password was changed`, [
        GREETING,
        'The password of your account was just changed, and your other sessions were signed out.',
        'If it was not you, reset your password at once and tell your administrator.',
      ]);
    case 'email_change_confirm':
      return build(ctx, `Confirm your new e-mail address for ${ctx.productName}`, [
        GREETING,
        `Confirm that your account's address should become ${input.newEmail}. The link works once, for 1 hour.`,
        { link: link(ctx, LINK_PATHS.confirmEmailChange, input.token), label: 'Confirm the new address' },
        IGNORE,
      ]);
    case 'email_change_notice':
      return build(ctx, `Your ${ctx.productName} e-mail address is being changed`, [
        GREETING,
        `Someone asked to change your account's address to ${input.newEmail}. It changes only once the link sent there is opened.`,
        'If it was not you, change your password and tell your administrator.',
      ]);
    case 'email_change_taken':
      return build(ctx, `Someone tried to move an account to your address — ${ctx.productName}`, [
        GREETING,
        'Someone signed in to another account asked to change its address to this one. Your account already has this address, so nothing changed.',
        'If it was you, sign in with this address instead (or reset its password if you forgot it).',
      ]);
    case 'security_notice':
      return build(ctx, `${input.title} — ${ctx.productName}`, [GREETING, ...input.lines, 'If it was not you, tell your administrator at once.']);
  }
}
