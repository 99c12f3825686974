import type { HandlerMap } from '../http/types';
import { principalOf } from '../access/roles';
import * as auth from './service';

type AuthOperations = 'getBootstrapStatus' | 'bootstrap' | 'signUp' | 'signIn' | 'reauthenticate' | 'signOut' | 'getMe' | 'setActiveOrganization';

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
};
