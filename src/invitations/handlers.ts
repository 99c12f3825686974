import type { HandlerMap } from '../contract';
import { membershipOf, principalOf, userIdOf } from '../access/roles';
import * as invitations from './service';
import * as acceptance from './acceptance';
import { guardInvitationAccept } from '../protection/rate-limit';
import { Invalid, Unauthorized } from '../lib/errors';

type InvitationOperations = 'createInvitation' | 'listInvitations' | 'cancelInvitation' | 'resendInvitation' | 'previewInvitation' | 'listMyInvitations' | 'acceptInvitation';

export const invitationHandlers: HandlerMap<InvitationOperations> = {
  createInvitation: async (ctx) => {
    const item = await invitations.createInvitation(ctx.deps, membershipOf(ctx), ctx.body);
    return { status: 201, body: { ok: true, item } };
  },

  listInvitations: async (ctx) => ({ status: 200, body: await invitations.listInvitations(ctx.deps, membershipOf(ctx), ctx.query) }),

  cancelInvitation: async (ctx) => {
    const item = await invitations.cancelInvitation(ctx.deps, membershipOf(ctx), ctx.params.invitationId);
    return { status: 200, body: { ok: true, item } };
  },

  resendInvitation: async (ctx) => {
    const item = await invitations.resendInvitation(ctx.deps, membershipOf(ctx), ctx.params.invitationId);
    return { status: 202, body: { ok: true, item } };
  },

  previewInvitation: async (ctx) => ({ status: 200, body: await acceptance.previewInvitation(ctx.deps, ctx.query.token, ctx.ip) }),

  listMyInvitations: async (ctx) => ({ status: 200, body: await acceptance.listMyInvitations(ctx.deps, principalOf(ctx), ctx.query) }),

  acceptInvitation: async (ctx) => {
    if (!ctx.principal) {
      // No session: only a request with no credential at all creates an account; a dead session
      // token or an API key is refused as on any session route.
      if (ctx.headers.authorization !== undefined || ctx.headers['x-api-key'] !== undefined) throw new Unauthorized();
      const { token, name, password } = ctx.body;
      if (name === undefined) throw Invalid.at(['body', 'name'], 'name is required without a session');
      if (password === undefined) throw Invalid.at(['body', 'password'], 'password is required without a session');
      const accepted = await acceptance.acceptAsNewAccount(ctx.deps, { token, name, password }, { ip: ctx.ip, userAgent: ctx.headers['user-agent'] as string | undefined });
      return { status: 201, body: { ok: true, ...accepted } };
    }
    // Rate limited per user and per IP (src/protection), before any lookup or transaction.
    await guardInvitationAccept(ctx.deps, { userId: userIdOf(principalOf(ctx)), ip: ctx.ip });
    const member = await acceptance.acceptInvitation(ctx.deps, principalOf(ctx), ctx.body.token);
    return { status: 200, body: { ok: true, member } };
  },
};
