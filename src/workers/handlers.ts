import type { DeferredCredentials, HandlerMap } from '../contract';
import { membershipOf, workerClaimOf, workerOf } from '../access/roles';
import * as workers from './service';
import * as lifecycle from './lifecycle';
import { setWorkerCeiling } from './ceiling';
import { delegateToWorker } from './delegations';

export const workerHandlers: HandlerMap<
  | 'createWorker'
  | 'listWorkers'
  | 'getWorker'
  | 'updateWorker'
  | 'deleteWorker'
  | 'getWorkerRuntime'
  | 'reportWorkerActivity'
  | 'listWorkerActivity'
  | 'workerHeartbeat'
  | 'stopWorker'
  | 'startWorker'
  | 'rotateWorkerToken'
  | 'putWorkerCeiling'
  | 'createWorkerDelegation'
> = {
  createWorker: async (ctx) => {
    const created = await workers.createWorker(ctx.deps, membershipOf(ctx), ctx.body);
    return { status: 201, body: { ok: true, ...created } };
  },

  listWorkers: async (ctx) => ({ status: 200, body: await workers.listWorkers(ctx.deps, membershipOf(ctx), ctx.query) }),

  getWorker: async (ctx) => ({ status: 200, body: { ok: true, item: await workers.getWorker(ctx.deps, membershipOf(ctx), ctx.params.id) } }),

  updateWorker: async (ctx) => ({
    status: 200,
    body: { ok: true, item: await workers.updateWorker(ctx.deps, membershipOf(ctx), ctx.params.id, ctx.body) },
  }),

  deleteWorker: async (ctx) => {
    await workers.deleteWorker(ctx.deps, membershipOf(ctx), ctx.params.id);
    return { status: 204, body: undefined };
  },

  getWorkerRuntime: async (ctx) => ({ status: 200, body: await workers.getWorkerRuntime(ctx.deps, membershipOf(ctx), ctx.params.id) }),

  reportWorkerActivity: async (ctx) => {
    const accepted = await workers.reportActivity(ctx.deps, workerOf(ctx), ctx.params.id, ctx.body.events);
    return { status: 202, body: { ok: true, accepted } };
  },

  listWorkerActivity: async (ctx) => ({
    status: 200,
    body: await workers.listActivity(ctx.deps, membershipOf(ctx), ctx.params.id, ctx.query),
  }),

  workerHeartbeat: async (ctx) => ({
    status: 200,
    body: { ok: true, status: await lifecycle.heartbeat(ctx.deps, workerClaimOf(ctx), ctx.params.id, ctx.body ?? {}) },
  }),

  stopWorker: async (ctx) => ({ status: 200, body: { ok: true, item: await lifecycle.setStopped(ctx.deps, membershipOf(ctx), ctx.params.id, true) } }),

  startWorker: async (ctx) => ({ status: 200, body: { ok: true, item: await lifecycle.setStopped(ctx.deps, membershipOf(ctx), ctx.params.id, false) } }),

  rotateWorkerToken: async (ctx) => ({ status: 200, body: { ok: true, hostToken: await lifecycle.rotateToken(ctx.deps, membershipOf(ctx), ctx.params.id) } }),

  putWorkerCeiling: async (ctx) => ({ status: 200, body: { ok: true, item: await setWorkerCeiling(ctx.deps, membershipOf(ctx), ctx.params.id, ctx.body) } }),

  createWorkerDelegation: async (ctx) => ({ status: 201, body: { ok: true, ...(await delegateToWorker(ctx.deps, membershipOf(ctx), ctx.params.id, ctx.body)) } }),
};

/** The heartbeat checks its worker token in the statement that records it (src/workers/service.ts). */
export const workerDeferredCredentials: DeferredCredentials = ['workerHeartbeat'];
