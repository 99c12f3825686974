import { sql } from 'kysely';
import type { HandlerMap } from '../http/types';
import { Unavailable } from '../lib/errors';

export const systemHandlers: HandlerMap<'getHealth' | 'getReady'> = {
  getHealth: async () => ({ status: 200, body: { status: 'ok' } }),
  getReady: async ({ deps }) => {
    try {
      await sql`SELECT 1`.execute(deps.db);
    } catch {
      throw new Unavailable('The database does not answer.');
    }
    return { status: 200, body: { status: 'ok' } };
  },
};
