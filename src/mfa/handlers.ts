import type { HandlerMap } from '../contract';
import { membershipOf, principalOf } from '../access/roles';
import * as mfa from './service';
import * as challenges from './challenges';

type MfaOperations =
  | 'getMfaStatus'
  | 'startTotpEnrolment'
  | 'confirmTotpEnrolment'
  | 'removeTotp'
  | 'regenerateRecoveryCodes'
  | 'getPasskeyCreationOptions'
  | 'registerPasskey'
  | 'listPasskeys'
  | 'deletePasskey'
  | 'getPasskeyRequestOptions'
  | 'verifySecondFactor'
  | 'getAuthPolicy'
  | 'putAuthPolicy';

export const mfaHandlers: HandlerMap<MfaOperations> = {
  getMfaStatus: async (ctx) => ({ status: 200, body: await mfa.status(ctx.deps, principalOf(ctx)) }),

  startTotpEnrolment: async (ctx) => ({ status: 200, body: { ok: true, ...(await mfa.startTotp(ctx.deps, principalOf(ctx))) } }),

  confirmTotpEnrolment: async (ctx) => ({ status: 200, body: { ok: true, ...(await mfa.confirmTotp(ctx.deps, principalOf(ctx), ctx.body.code)) } }),

  removeTotp: async (ctx) => {
    await mfa.removeTotp(ctx.deps, principalOf(ctx), ctx.body.code);
    return { status: 204, body: undefined };
  },

  regenerateRecoveryCodes: async (ctx) => ({ status: 200, body: { ok: true, ...(await mfa.regenerateRecoveryCodes(ctx.deps, principalOf(ctx))) } }),

  getPasskeyCreationOptions: async (ctx) => ({ status: 200, body: await mfa.passkeyRegistrationOptions(ctx.deps, principalOf(ctx)) }),

  registerPasskey: async (ctx) => ({
    status: 201,
    body: { ok: true, item: await mfa.registerPasskey(ctx.deps, principalOf(ctx), { name: ctx.body.name, response: ctx.body.response as never }) },
  }),

  listPasskeys: async (ctx) => ({ status: 200, body: { items: await mfa.listPasskeys(ctx.deps, principalOf(ctx)) } }),

  deletePasskey: async (ctx) => {
    await mfa.deletePasskey(ctx.deps, principalOf(ctx), ctx.params.passkeyId);
    return { status: 204, body: undefined };
  },

  getPasskeyRequestOptions: async (ctx) => ({ status: 200, body: await challenges.passkeyChallengeOptions(ctx.deps, ctx.body.challengeToken) }),

  verifySecondFactor: async (ctx) => {
    const body = ctx.body;
    const answer: challenges.Answer = 'response' in body ? { method: 'passkey', response: body.response as never } : { method: body.method, code: body.code };
    const verified = await challenges.verify(ctx.deps, body.challengeToken, answer, ctx.ip, ctx.headers['user-agent']);
    return verified.purpose === 'sign_in'
      ? { status: 200, body: { ok: true, user: verified.user, session: verified.session } }
      : { status: 200, body: { ok: true, authenticatedAt: verified.authenticatedAt } };
  },

  getAuthPolicy: async (ctx) => ({ status: 200, body: await mfa.getPolicy(ctx.deps, membershipOf(ctx)) }),

  putAuthPolicy: async (ctx) => ({
    status: 200,
    body: await mfa.putPolicy(ctx.deps, principalOf(ctx), membershipOf(ctx), ctx.body.requireMfa),
  }),
};
