import { nextPurgeLimit, PURGE_STATEMENT_MS } from '../../src/org/lifecycle-job';

/**
 * The purge's statement size (docs/organization-deletion.md#purge): sized by the last statement's
 * time per row to take about PURGE_STATEMENT_MS, at most doubling, within 1 and ORG_PURGE_BATCH.
 */
describe('nextPurgeLimit', () => {
  it('shrinks a slow statement to what fits the aim', () => {
    // 100 members took 2 s (a foreign-key check per referencing table, on a busy database): 5 fit 100 ms.
    expect(nextPurgeLimit(100, 2000, 1000)).toBe(Math.floor((100 * PURGE_STATEMENT_MS) / 2000));
    expect(nextPurgeLimit(1, 5000, 1000)).toBe(1);
  });

  it('grows a fast one at most twofold, never past ORG_PURGE_BATCH', () => {
    expect(nextPurgeLimit(100, 5, 1000)).toBe(200);
    expect(nextPurgeLimit(800, 5, 1000)).toBe(1000);
    expect(nextPurgeLimit(3, 0, 3)).toBe(3);
  });
});
