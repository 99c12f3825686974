import type { HandlerMap } from '../contract';
import { membershipOf } from '../access/roles';
import * as templates from './service';

type Ops = 'listTemplates' | 'createTemplate' | 'getTemplate' | 'updateTemplate' | 'deleteTemplate';

export const templateHandlers: HandlerMap<Ops> = {
  listTemplates: async (ctx) => ({ status: 200, body: await templates.listTemplates(ctx.deps, membershipOf(ctx), ctx.query) }),
  createTemplate: async (ctx) => {
    const item = await templates.createTemplate(ctx.deps, membershipOf(ctx), ctx.body);
    return { status: 201, body: { ok: true, item }, headers: { ETag: templates.etagOf(item) } };
  },
  getTemplate: async (ctx) => {
    const item = await templates.getTemplate(ctx.deps, membershipOf(ctx), ctx.params.templateId);
    return { status: 200, body: { ok: true, item }, headers: { ETag: templates.etagOf(item) } };
  },
  updateTemplate: async (ctx) => {
    const item = await templates.updateTemplate(ctx.deps, membershipOf(ctx), ctx.params.templateId, ctx.body, ctx.headers['if-match']);
    return { status: 200, body: { ok: true, item }, headers: { ETag: templates.etagOf(item) } };
  },
  deleteTemplate: async (ctx) => {
    await templates.deleteTemplate(ctx.deps, membershipOf(ctx), ctx.params.templateId, ctx.headers['if-match']);
    return { status: 204, body: undefined };
  },
};
