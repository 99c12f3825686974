import type { HandlerMap } from '../contract';
import { membershipOf } from '../access/roles';
import * as streams from './service';

export const auditStreamHandlers: HandlerMap<'createAuditStream' | 'listAuditStreams' | 'getAuditStream' | 'updateAuditStream' | 'deleteAuditStream' | 'getAuditStreamStatus'> = {
  createAuditStream: async (ctx) => {
    const { item, secret } = await streams.createStream(ctx.deps, membershipOf(ctx), ctx.body);
    return { status: 201, body: secret === undefined ? { ok: true, item } : { ok: true, item, secret } };
  },

  listAuditStreams: async (ctx) => ({ status: 200, body: await streams.listStreams(ctx.deps, membershipOf(ctx), ctx.query) }),

  getAuditStream: async (ctx) => ({ status: 200, body: { ok: true, item: await streams.getStream(ctx.deps, membershipOf(ctx), ctx.params.streamId) } }),

  updateAuditStream: async (ctx) => ({ status: 200, body: { ok: true, item: await streams.updateStream(ctx.deps, membershipOf(ctx), ctx.params.streamId, ctx.body) } }),

  deleteAuditStream: async (ctx) => {
    await streams.deleteStream(ctx.deps, membershipOf(ctx), ctx.params.streamId);
    return { status: 204, body: undefined };
  },

  getAuditStreamStatus: async (ctx) => ({ status: 200, body: { ok: true, ...(await streams.streamStatus(ctx.deps, membershipOf(ctx), ctx.params.streamId)) } }),
};
