import type { HandlerMap } from '../contract';
import { membershipOf } from '../access/roles';
import * as teams from './service';

type TeamOperations = 'createTeam' | 'listTeams' | 'getTeam' | 'updateTeam' | 'deleteTeam' | 'addTeamMember' | 'removeTeamMember' | 'listTeamMembers';

export const teamHandlers: HandlerMap<TeamOperations> = {
  createTeam: async (ctx) => ({ status: 201, body: { ok: true, item: await teams.createTeam(ctx.deps, membershipOf(ctx), ctx.body) } }),

  listTeams: async (ctx) => ({ status: 200, body: await teams.listTeams(ctx.deps, membershipOf(ctx), ctx.query) }),

  getTeam: async (ctx) => ({ status: 200, body: { ok: true, item: await teams.getTeam(ctx.deps, membershipOf(ctx), ctx.params.teamId) } }),

  updateTeam: async (ctx) => ({
    status: 200,
    body: { ok: true, item: await teams.renameTeam(ctx.deps, membershipOf(ctx), ctx.params.teamId, ctx.body.name) },
  }),

  deleteTeam: async (ctx) => {
    await teams.deleteTeam(ctx.deps, membershipOf(ctx), ctx.params.teamId);
    return { status: 204, body: undefined };
  },

  listTeamMembers: async (ctx) => ({ status: 200, body: await teams.listTeamMembers(ctx.deps, membershipOf(ctx), ctx.params.teamId, ctx.query) }),

  addTeamMember: async (ctx) => ({
    status: 200,
    body: { ok: true, item: await teams.addTeamMember(ctx.deps, membershipOf(ctx), ctx.params.teamId, ctx.params.memberId) },
  }),

  removeTeamMember: async (ctx) => {
    await teams.removeTeamMember(ctx.deps, membershipOf(ctx), ctx.params.teamId, ctx.params.memberId);
    return { status: 204, body: undefined };
  },
};
