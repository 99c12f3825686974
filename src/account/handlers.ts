import type { HandlerMap } from '../contract';
import { principalOf } from '../access/roles';
import * as sessions from './sessions';
import { updateProfile } from './profile';
import { declineSignUp, deleteAccount } from './deletion';
import { confirmEmailChange, requestEmailChange } from './email-change';
import { exportMyData } from './export';

type AccountOperations =
  | 'listMySessions'
  | 'revokeMySession'
  | 'revokeOtherSessions'
  | 'updateMe'
  | 'deleteMe'
  | 'declineEmailVerification'
  | 'requestEmailChange'
  | 'confirmEmailChange'
  | 'exportMyData';

/** The caller's own account (docs/accounts.md#the-callers-own-account): sessions, profile, e-mail change, deletion. */
export const accountHandlers: HandlerMap<AccountOperations> = {
  exportMyData: async (ctx) => ({
    status: 200,
    body: undefined as never,
    headers: { 'content-type': 'application/json; charset=utf-8', 'content-disposition': 'attachment; filename="my-data.json"', 'cache-control': 'no-store' },
    stream: await exportMyData(ctx.deps, principalOf(ctx)),
  }),

  listMySessions: async (ctx) => ({ status: 200, body: { items: await sessions.listMySessions(ctx.deps, principalOf(ctx)) } }),

  revokeMySession: async (ctx) => {
    await sessions.revokeMySession(ctx.deps, principalOf(ctx), ctx.params.sessionId);
    return { status: 204, body: undefined };
  },

  updateMe: async (ctx) => ({ status: 200, body: { ok: true, user: await updateProfile(ctx.deps, principalOf(ctx), ctx.body) } }),

  deleteMe: async (ctx) => {
    await deleteAccount(ctx.deps, principalOf(ctx), ctx.body?.password, ctx.ip);
    return { status: 204, body: undefined };
  },

  declineEmailVerification: async (ctx) => ({ status: 200, body: { ok: true, ...(await declineSignUp(ctx.deps, ctx.body.token)) } }),

  requestEmailChange: async (ctx) => {
    await requestEmailChange(ctx.deps, principalOf(ctx), ctx.body.email);
    return { status: 202, body: { ok: true } };
  },

  confirmEmailChange: async (ctx) => ({ status: 200, body: { ok: true, user: await confirmEmailChange(ctx.deps, ctx.body.token) } }),

  revokeOtherSessions: async (ctx) => ({ status: 200, body: { ok: true, revoked: await sessions.revokeOtherSessions(ctx.deps, principalOf(ctx)) } }),
};
