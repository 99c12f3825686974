import pino from 'pino';
import supertest from 'supertest';
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';
import { createApp } from '../../src/server/app';
import type { TestApp } from './app';

/** Counts the statements the app sends to the database (one per round trip; Kysely's BEGIN and COMMIT are not counted). */
class StatementCounter implements KyselyPlugin {
  count = 0;
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    this.count += 1;
    return args.result;
  }
}

/**
 * A second app on the test app's database and clock whose every statement is counted: `http`
 * drives it, `statements(run)` tells how many statements `run` sent.
 */
export function countingApp(t: TestApp): { http: ReturnType<typeof supertest>; statements: (run: () => Promise<unknown>) => Promise<number> } {
  const counter = new StatementCounter();
  const app = createApp({ db: t.db.withPlugin(counter), clock: t.clock, logger: pino({ level: 'silent' }), fetch: globalThis.fetch, settings: t.settings, validateResponses: true, compileValidatorsAtStart: false });
  return {
    http: supertest(app),
    statements: async (run) => {
      const before = counter.count;
      await run();
      return counter.count - before;
    },
  };
}
