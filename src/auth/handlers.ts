import type { HandlerMap } from '../contract';
import { principalOf } from '../access/roles';
import * as auth from './service';
import * as verification from './verification';
import * as passwords from './passwords';

type AuthOperations =
  | 'getBootstrapStatus'
  | 'bootstrap'
  | 'signUp'
  | 'signIn'
  | 'reauthenticate'
  | 'signOut'
  | 'getMe'
  | 'setActiveOrganization'
  | 'verifyEmail'
  | 'resendVerificationEmail'
  | 'requestPasswordReset'
  | 'confirmPasswordReset'
  | 'changePassword';

export const authHandlers: HandlerMap<AuthOperations> = {
  getBootstrapStatus: async ({ deps }) => ({ status: 200, body: { bootstrapped: await auth.bootstrapStatus(deps) } }),

  bootstrap: async ({ deps, body, headers, ip }) => {
    const result = await auth.bootstrap(deps, { ...body, token: headers['x-bootstrap-token'] }, { ip, userAgent: headers['user-agent'] });
    return { status: 201, body: { ok: true, ...result } };
  },

  signUp: async ({ deps, body, headers, ip }) => ({ status: 201, body: { ok: true, ...(await auth.signUp(deps, body, { ip, userAgent: headers['user-agent'] })) } }),

  signIn: async ({ deps, body, headers, ip }) => ({ status: 200, body: { ok: true, ...(await auth.signIn(deps, body, { ip, userAgent: headers['user-agent'] })) } }),

  reauthenticate: async (ctx) => ({ status: 200, body: { ok: true, ...(await auth.reauthenticate(ctx.deps, principalOf(ctx), ctx.body.password, ctx.ip)) } }),

  signOut: async (ctx) => {
    await auth.signOut(ctx.deps, principalOf(ctx));
    return { status: 204, body: undefined };
  },

  getMe: async (ctx) => ({ status: 200, body: await auth.me(ctx.deps, principalOf(ctx)) }),

  setActiveOrganization: async (ctx) => {
    const activeOrganizationId = await auth.setActiveOrganization(ctx.deps, principalOf(ctx), ctx.body.organizationId);
    return { status: 200, body: { ok: true, activeOrganizationId } };
  },

  verifyEmail: async ({ deps, body, principal }) => {
    // The caller's session, when it is one: a session of the account keeps its credentials.
    const sessionUserId = principal?.kind === 'session' ? principal.userId : null;
    const { user, passwordResetRequired } = await verification.verifyEmail(deps, body.token, { sessionUserId, resetLink: 'mail' });
    return { status: 200, body: { ok: true, user, passwordResetRequired } };
  },

  resendVerificationEmail: async (ctx) => {
    await verification.resendVerification(ctx.deps, principalOf(ctx));
    return { status: 202, body: { ok: true } };
  },

  requestPasswordReset: async ({ deps, body, ip }) => {
    await passwords.requestPasswordReset(deps, body.email, ip);
    return { status: 202, body: { ok: true } };
  },

  confirmPasswordReset: async ({ deps, body }) => {
    await passwords.confirmPasswordReset(deps, body);
    return { status: 200, body: { ok: true } };
  },

  changePassword: async (ctx) => {
    await passwords.changePassword(ctx.deps, principalOf(ctx), ctx.body, ctx.ip);
    return { status: 200, body: { ok: true } };
  },
};
