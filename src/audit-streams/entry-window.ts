import type { Db } from '../db/schema';
import { entriesAfter as readEntries, type EntryReader, type PositionedEntry } from '../audit';

/** Entries kept per organization: two full batches. */
const WINDOW_ENTRIES = 1_000;
/** Organizations kept (the least recently read goes first). */
const WINDOW_ORGANIZATIONS = 64;

interface Window {
  /** Every entry after position `from`, in chain order, up to the last one read. */
  entries: PositionedEntry[];
  from: bigint;
  /** Reads of this organization run one at a time, so its streams share what one of them read. */
  turn: Promise<unknown>;
}

/**
 * The latest entries each organization's streams read in this process: its streams read the same
 * entries about together (each after its own cursor), so the second one takes them from here and
 * asks the database only for what is past them. Without it every stream of an organization read,
 * parsed and converted each entry again (bench scenario 8: the driver's parsing of a batch's rows
 * was the largest part of a stream's CPU, on the thread serving the writes). Entries never change
 * once written, and the chain head's row lock makes positions commit in order, so a window read
 * from a cursor on has no gap a later commit could fill.
 */
export class EntryWindows {
  private readonly byOrganization = new Map<string, Window>();

  constructor(
    private readonly limit = WINDOW_ENTRIES,
    /** The database read (tests count it). */
    private readonly entriesAfter: typeof readEntries = readEntries,
  ) {}

  /** A reader for one organization's stream batch (streamBatch's `read`). */
  reader(db: Db, organizationId: string): EntryReader {
    return (afterSeq, take) => this.read(db, organizationId, afterSeq, take);
  }

  private async read(db: Db, organizationId: string, afterSeq: string, take: number): Promise<PositionedEntry[]> {
    let window = this.byOrganization.get(organizationId);
    if (!window) {
      window = { entries: [], from: 0n, turn: Promise.resolve() };
      this.byOrganization.set(organizationId, window);
      if (this.byOrganization.size > WINDOW_ORGANIZATIONS) this.byOrganization.delete(this.byOrganization.keys().next().value!);
    } else {
      // Most recently read last, so the least recent goes first.
      this.byOrganization.delete(organizationId);
      this.byOrganization.set(organizationId, window);
    }
    const w = window;
    const run = w.turn.then(() => this.readFrom(db, organizationId, w, afterSeq, take));
    w.turn = run.catch(() => undefined);
    return run;
  }

  private async readFrom(db: Db, organizationId: string, w: Window, afterSeq: string, take: number): Promise<PositionedEntry[]> {
    const after = BigInt(afterSeq);
    const last = w.entries.length > 0 ? BigInt(w.entries[w.entries.length - 1]!.seq) : null;
    if (last === null || after < w.from || after > last) {
      // Outside the window: read from the cursor and keep that instead.
      const read = await this.entriesAfter(db, organizationId, afterSeq, take);
      this.keep(w, after, read);
      return read;
    }
    const start = w.entries.findIndex((e) => BigInt(e.seq) > after);
    const kept = start < 0 ? [] : w.entries.slice(start, start + take);
    if (kept.length === take) return kept;
    const more = await this.entriesAfter(db, organizationId, last.toString(), take - kept.length);
    if (more.length > 0) this.keep(w, w.from, w.entries.concat(more));
    return kept.concat(more);
  }

  /** Keeps `entries` (every entry after `from`, in order), trimmed to the newest `limit`. */
  private keep(w: Window, from: bigint, entries: PositionedEntry[]): void {
    const drop = Math.max(0, entries.length - this.limit);
    w.from = drop > 0 ? BigInt(entries[drop - 1]!.seq) : from;
    w.entries = drop > 0 ? entries.slice(drop) : entries;
  }
}
