import { Worker } from 'node:worker_threads';

/**
 * The strength estimate of a new password (docs/protection.md#passwords): @zxcvbn-ts/core with the
 * dictionaries and keyboard graphs of @zxcvbn-ts/language-common, run on a worker thread of its
 * own. Its matchers (repeats above all) take tens to hundreds of milliseconds on a hostile
 * password such as `ab1!` repeated, and sign-up is public: on the event loop one request would
 * stall every other. The worker is started on first use (it loads the dictionaries, about 0.4 s)
 * and unref'd, so it never keeps the process alive; if it dies, the next estimate starts another.
 */
export interface Estimate {
  /** zxcvbn's 0..4 score. */
  score: number;
  /** log10 of the estimated guesses. */
  guessesLog10: number;
  /** zxcvbn's warning key (`simpleRepeat`, `sequences`, `common`, ...) or null. */
  warning: string | null;
}

/**
 * Only this many leading characters are estimated: the matchers' cost grows faster than the
 * length. A password whose first 64 characters are weak is weak; one whose first 64 are strong
 * needs no more reading.
 */
export const ESTIMATED_LENGTH = 64;

/** The worker's code: plain CommonJS, the packages resolved by the main thread (works from src and dist alike). */
function workerSource(): string {
  const core = JSON.stringify(require.resolve('@zxcvbn-ts/core'));
  const common = JSON.stringify(require.resolve('@zxcvbn-ts/language-common'));
  return `
    const { parentPort } = require('node:worker_threads');
    const { ZxcvbnFactory } = require(${core});
    const common = require(${common});
    const zxcvbn = new ZxcvbnFactory({ dictionary: { ...common.dictionary }, graphs: common.adjacencyGraphs, maxLength: ${ESTIMATED_LENGTH} });
    parentPort.on('message', ({ id, password, inputs }) => {
      try {
        const r = zxcvbn.check(password, inputs);
        parentPort.postMessage({ id, estimate: { score: r.score, guessesLog10: r.guessesLog10, warning: r.feedback.warning ?? null } });
      } catch (err) {
        parentPort.postMessage({ id, error: String(err && err.message || err) });
      }
    });`;
}

type Pending = { resolve: (e: Estimate) => void; reject: (err: Error) => void };
let worker: Worker | null = null;
const pending = new Map<number, Pending>();
let nextId = 0;

function failAll(err: Error): void {
  for (const p of pending.values()) p.reject(err);
  pending.clear();
  worker = null;
}

function estimator(): Worker {
  if (worker) return worker;
  const w = new Worker(workerSource(), { eval: true });
  w.unref();
  w.on('message', (message: { id: number; estimate?: Estimate; error?: string }) => {
    const p = pending.get(message.id);
    if (!p) return;
    pending.delete(message.id);
    if (message.estimate) p.resolve(message.estimate);
    else p.reject(new Error(`password estimate failed: ${message.error ?? 'unknown'}`));
    if (pending.size === 0) w.unref();
  });
  w.on('error', (err) => failAll(err));
  w.on('exit', () => {
    if (worker === w) failAll(new Error('password estimator exited'));
  });
  worker = w;
  return w;
}

/** zxcvbn's estimate of `password`, with the account's own words (e-mail, its parts, name) as known inputs. */
export function estimate(password: string, inputs: string[]): Promise<Estimate> {
  const w = estimator();
  const id = nextId++;
  return new Promise<Estimate>((resolve, reject) => {
    pending.set(id, { resolve, reject });
    // Referenced while an estimate is awaited, so a short-lived script still gets its answer.
    w.ref();
    w.postMessage({ id, password: password.slice(0, ESTIMATED_LENGTH), inputs });
  });
}
