import type { HandlerMap } from '../contract';
import { membershipOf } from '../access/roles';
import * as audit from './service';
import * as checkpoints from './checkpoints';

export const auditHandlers: HandlerMap<'listAuditLogs' | 'exportAuditLogs' | 'verifyAuditLog' | 'listAuditCheckpoints' | 'verifyAuditCheckpoint' | 'getAuditKey'> = {
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

  listAuditCheckpoints: async (ctx) => ({ status: 200, body: await checkpoints.listAuditCheckpoints(ctx.deps, membershipOf(ctx), ctx.query) }),

  verifyAuditCheckpoint: async (ctx) => ({ status: 200, body: await checkpoints.verifyAuditCheckpoint(ctx.deps, membershipOf(ctx), ctx.body.checkpoint) }),

  getAuditKey: async (ctx) => {
    const verifier = await checkpoints.auditKeyVerifier(ctx.deps);
    // A text answer leaves through the router's streamed-body path, which writes it as it is.
    async function* text() {
      yield verifier;
    }
    return { status: 200, body: undefined as never, headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'public, max-age=300' }, stream: text() };
  },
};
