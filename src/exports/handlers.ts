import type { HandlerMap } from '../contract';
import { membershipOf, principalOf } from '../access/roles';
import * as orgExports from './service';

export const exportHandlers: HandlerMap<'createOrgExport' | 'listOrgExports' | 'getOrgExport' | 'downloadOrgExport'> = {
  createOrgExport: async (ctx) => ({ status: 202, body: { ok: true, item: await orgExports.requestExport(ctx.deps, principalOf(ctx), membershipOf(ctx)) } }),

  listOrgExports: async (ctx) => ({ status: 200, body: await orgExports.listExports(ctx.deps, membershipOf(ctx), ctx.query) }),

  getOrgExport: async (ctx) => ({ status: 200, body: { ok: true, item: await orgExports.getExport(ctx.deps, membershipOf(ctx), ctx.params.exportId) } }),

  downloadOrgExport: async (ctx) => {
    const out = await orgExports.downloadExport(ctx.deps, membershipOf(ctx), ctx.params.exportId);
    return {
      status: 200,
      body: undefined as never,
      headers: {
        'content-type': 'application/zip',
        'content-length': String(out.size),
        'content-disposition': `attachment; filename="${out.fileName}"`,
        // RFC 9530: the SHA-256 of the whole zip, as the export's `sha256` says it in hex.
        'repr-digest': `sha-256=:${Buffer.from(out.sha256, 'hex').toString('base64')}:`,
        'cache-control': 'no-store',
      },
      stream: out.stream,
    };
  },
};
