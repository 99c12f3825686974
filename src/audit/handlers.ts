import type { HandlerMap } from '../contract';
import { membershipOf } from '../access/roles';
import * as audit from './service';

export const auditHandlers: HandlerMap<'listAuditLogs' | 'exportAuditLogs' | 'verifyAuditLog'> = {
  listAuditLogs: async (ctx) => ({ status: 200, body: await audit.listAuditLogs(ctx.deps, membershipOf(ctx), ctx.query) }),

  exportAuditLogs: async (ctx) => {
    const out = await audit.exportAuditLogs(ctx.deps, membershipOf(ctx), ctx.query);
    return {
      status: 200,
      body: undefined as never,
      headers: { 'content-type': out.contentType, 'content-disposition': `attachment; filename="${out.fileName}"`, 'cache-control': 'no-store' },
      stream: out.stream,
    };
  },

  verifyAuditLog: async (ctx) => ({ status: 200, body: await audit.verifyAuditLog(ctx.deps, membershipOf(ctx)) }),
};
