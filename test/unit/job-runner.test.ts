import pino from 'pino';
import { JobRunner, type JobKind } from '../../src/jobs/runner';
import { ManualClock } from '../support/clock';

/** A kind whose second job throws out of attempt(), breaking the kind's "never throws" contract. */
function throwingKind(): JobKind & { done: string[]; queue: string[] } {
  return {
    name: 'fake',
    channel: 'fake_jobs',
    concurrency: 4,
    pollMs: 1000,
    leaseMs: 60_000,
    done: [],
    queue: ['a', 'b', 'c'],
    async claim({ batch }) {
      return this.queue.splice(0, batch).map((id) => ({ id }));
    },
    async attempt(job) {
      if (job.id === 'b') throw new Error('secret did not open');
      this.done.push(job.id);
    },
    pendingOutcomes: () => 0,
    flush: async () => undefined,
  };
}

describe('job runner', () => {
  it('logs an attempt that throws and goes on with the other jobs', async () => {
    const lines: { msg: string; kind?: string; jobId?: string }[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const kind = throwingKind();
    const runner = new JobRunner({ clock: new ManualClock(new Date('2026-01-01T00:00:00Z')), logger, kinds: [kind] });
    await expect(runner.runOnce()).resolves.toBe(3);
    expect(kind.done).toEqual(['a', 'c']);
    expect(lines).toEqual([expect.objectContaining({ kind: 'fake', jobId: 'b', msg: expect.stringContaining('job attempt threw') })]);
  });
});
