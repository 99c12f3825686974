import type { HandlerMap } from '../contract';
import { membershipOf } from '../access/roles';
import * as suite from './service';

type SuiteOperations =
  | 'getSuiteOAuthClient'
  | 'putSuiteOAuthClient'
  | 'startSuiteConnect'
  | 'completeSuiteOAuth'
  | 'getSuiteConnection'
  | 'deleteSuiteConnection'
  | 'sendSuiteChatMessage';

export const suiteHandlers: HandlerMap<SuiteOperations> = {
  getSuiteOAuthClient: async (ctx) => ({ status: 200, body: { ok: true, item: await suite.getClient(ctx.deps, membershipOf(ctx)) } }),

  putSuiteOAuthClient: async (ctx) => ({ status: 200, body: { ok: true, item: await suite.putClient(ctx.deps, membershipOf(ctx), ctx.body) } }),

  startSuiteConnect: async (ctx) => ({ status: 200, body: { ok: true, authorizeUrl: await suite.startConnect(ctx.deps, membershipOf(ctx)) } }),

  completeSuiteOAuth: async (ctx) => {
    await suite.completeOAuth(ctx.deps, { state: ctx.query.state, code: ctx.query.code, error: ctx.query.error, error_description: ctx.query.error_description, iss: ctx.query.iss });
    return { status: 200, body: { ok: true } };
  },

  getSuiteConnection: async (ctx) => ({ status: 200, body: await suite.getConnection(ctx.deps, membershipOf(ctx)) }),

  deleteSuiteConnection: async (ctx) => {
    await suite.deleteConnection(ctx.deps, membershipOf(ctx));
    return { status: 204, body: undefined };
  },

  sendSuiteChatMessage: async (ctx) => ({
    status: 200,
    body: { ok: true, message: await suite.sendMessage(ctx.deps, membershipOf(ctx), ctx.params.chatId, ctx.body.content) },
  }),
};
