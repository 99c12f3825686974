import type { StreamRecord } from '../audit';

/**
 * Records serialized per slice: after each slice the batch yields to the event loop, so a batch
 * of 500 entries never holds the process's requests for its whole serialization (bench scenario
 * 8: the writes beside two streams; docs/audit.md#streams).
 */
export const SERIALIZE_SLICE = 64;

/** Entries kept serialized: a little more than two full batches of two streams. */
const CACHE_ENTRIES = 2_000;

/** Lets timers, I/O and requests waiting in the event loop run before the next slice. */
const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Each record's JSON, by its id, kept for the other streams of its organization in this process:
 * an organization's streams read the same entries about together, and an entry (or a checkpoint)
 * never changes once written, so each is serialized once rather than once per stream. Bounded
 * (oldest first out); a miss only costs the serialization again.
 */
export class RecordJsonCache {
  private readonly byId = new Map<string, string>();

  constructor(private readonly limit = CACHE_ENTRIES) {}

  get size(): number {
    return this.byId.size;
  }

  /**
   * The records' JSON in order, `JSON.stringify(record)` each, computed in slices of
   * SERIALIZE_SLICE with a yield to the event loop after each slice that did any work.
   */
  async serialize(records: readonly StreamRecord[]): Promise<string[]> {
    const out: string[] = new Array<string>(records.length);
    let made = 0;
    for (let i = 0; i < records.length; i++) {
      const record = records[i]!;
      let json = this.byId.get(record.id);
      if (json === undefined) {
        json = JSON.stringify(record);
        this.remember(record.id, json);
        if (++made % SERIALIZE_SLICE === 0 && i < records.length - 1) await yieldToLoop();
      }
      out[i] = json;
    }
    return out;
  }

  private remember(id: string, json: string): void {
    this.byId.set(id, json);
    if (this.byId.size > this.limit) this.byId.delete(this.byId.keys().next().value!);
  }
}
