import autocannon, { type AutocannonRequest } from 'autocannon';
import { sampleMachine, sampleProcesses, type MachineSample, type ProcessSample, type Target } from './procs';

export interface Measurement {
  label: string;
  /** Completed requests per second over the measured window. */
  rps: number;
  /** Latency percentiles of every completed response, in ms (float, from autocannon's hrtime). */
  p50: number;
  p99: number;
  requests: number;
  /** Socket errors and timeouts. */
  errors: number;
  /** Responses that were not 2xx. */
  non2xx: number;
  statusCodes: Record<string, number>;
  /** Peak resident memory of the measured process(es) during the window, MB (summed over processes). */
  peakRssMb: number | null;
  /** CPU used by the measured process(es) per wall second (1.0 = one core). */
  cpuCores: number | null;
  /** The machine during the window (measureRounds only): Postgres's CPU and every process's, per wall second. */
  machine?: MachineSample;
  /** measureRounds only: CPU ms per request of the measured process(es) in each round, in order (a still-warming target shows a falling series). */
  roundCpuMsPerReq?: number[];
  /** measureRounds only: CPU ms per request of this bench process over the rounds: the load generator (autocannon) for an HTTP load, the floor's own work for a loop. */
  loadGeneratorCpuMsPerReq?: number;
  /** Extra figures a scenario adds (events per second, rows checked ...). */
  extra?: Record<string, number | string>;
}

/** CPU ms per request of the measured process(es); NaN when not sampled. */
export function cpuMsPerRequest(m: Measurement): number {
  return m.cpuCores !== null && m.rps > 0 ? (m.cpuCores / m.rps) * 1000 : NaN;
}

/** Where a measureRounds load's CPU went, per request: the target(s), every local Postgres process, the load generator; and the machine's busy cores. */
export function cpuExtras(m: Measurement): Record<string, number> {
  const postgres = m.machine?.postgresCores;
  return {
    cpu_ms_per_req: Number(cpuMsPerRequest(m).toFixed(3)),
    ...(postgres != null && m.rps > 0 ? { pg_cpu_ms_per_req: Number(((postgres / m.rps) * 1000).toFixed(3)) } : {}),
    ...(m.loadGeneratorCpuMsPerReq !== undefined ? { loadgen_cpu_ms_per_req: Number(m.loadGeneratorCpuMsPerReq.toFixed(3)) } : {}),
    ...(m.machine ? { machine_busy_cores: Number(m.machine.busyCores.toFixed(2)) } : {}),
  };
}

const mean = (values: number[]): number => values.reduce((sum, v) => sum + v, 0) / Math.max(values.length, 1);

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

export interface LoadOptions {
  label: string;
  url: string;
  connections: number;
  /** Seconds of measurement. */
  duration: number;
  /** Seconds of un-measured load first (JIT, pool, caches). */
  warmup?: number;
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
  /** A rotating request list instead of one request (autocannon `requests`). */
  requests?: AutocannonRequest[];
  /** Processes whose memory and CPU are sampled during the measured window. */
  targets?: Target[];
}

interface RawRun {
  latencies: number[];
  requests: number;
  errors: number;
  non2xx: number;
  statusCodes: Record<string, number>;
  seconds: number;
}

async function fire(options: LoadOptions, seconds: number): Promise<RawRun> {
  const latencies: number[] = [];
  const started = process.hrtime.bigint();
  const instance = autocannon({
    url: options.url + (options.path ?? ''),
    connections: options.connections,
    duration: seconds,
    timeout: 10,
    method: options.method ?? 'GET',
    headers: options.headers,
    body: options.body,
    requests: options.requests,
  });
  instance.on('response', (_client: unknown, _status: number, _bytes: number, responseTime: number) => {
    latencies.push(responseTime);
  });
  const result = await instance;
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  const statusCodes: Record<string, number> = {};
  for (const [code, stat] of Object.entries(result.statusCodeStats ?? {})) statusCodes[code] = stat.count;
  return {
    latencies,
    requests: latencies.length,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    statusCodes,
    seconds: Math.max(elapsed, 0.001),
  };
}

/** Warm up, then measure a fixed duration, sampling the targets' memory and CPU meanwhile. */
export async function measure(options: LoadOptions): Promise<Measurement> {
  if (options.warmup && options.warmup > 0) await fire(options, options.warmup);
  const sampler = options.targets ? sampleProcesses(options.targets.map((t) => t.pid)) : null;
  const run = await fire(options, options.duration);
  const samples = sampler?.stop() ?? null;
  return summarize(options.label, run, samples);
}

function summarize(label: string, run: RawRun, samples: ReturnType<ReturnType<typeof sampleProcesses>['stop']> | null): Measurement {
  const sorted = run.latencies.slice().sort((a, b) => a - b);
  return {
    label,
    rps: run.requests / run.seconds,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    requests: run.requests,
    errors: run.errors,
    non2xx: run.non2xx,
    statusCodes: run.statusCodes,
    peakRssMb: samples ? samples.reduce((sum, s) => sum + s.peakRssMb, 0) : null,
    cpuCores: samples ? samples.reduce((sum, s) => sum + s.cpuCores, 0) : null,
  };
}

/** A floor as a load: `work` (one operation straight on the database) run by `concurrency` loops, timed per operation like a request. */
export interface LoopLoad {
  label: string;
  concurrency: number;
  work: () => Promise<void>;
  /** Seconds of measurement (split over the rounds by measureRounds). */
  duration: number;
  warmup?: number;
  /** Processes whose memory and CPU are sampled while the loop runs (a loop that drives a server over HTTP). */
  targets?: Target[];
}

function isLoop(load: LoadOptions | LoopLoad): load is LoopLoad {
  return 'work' in load;
}

/** `concurrency` loops of `work` for `seconds`; an operation that throws counts as an error. */
async function runLoop(load: LoopLoad, seconds: number): Promise<RawRun> {
  const latencies: number[] = [];
  const started = process.hrtime.bigint();
  const until = Date.now() + seconds * 1000;
  const loop = async () => {
    let errors = 0;
    while (Date.now() < until) {
      const t0 = process.hrtime.bigint();
      try {
        await load.work();
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
      } catch {
        errors++;
      }
    }
    return errors;
  };
  const errors = (await Promise.all(Array.from({ length: load.concurrency }, loop))).reduce((a, b) => a + b, 0);
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  return { latencies, requests: latencies.length, errors, non2xx: 0, statusCodes: {}, seconds: Math.max(elapsed, 0.001) };
}

const runOnce = (load: LoadOptions | LoopLoad, seconds: number): Promise<RawRun> => (isLoop(load) ? runLoop(load, seconds) : fire(load, seconds));

/**
 * Several targets measured in alternation: warm each up, then `rounds` rounds in which each target
 * gets `duration / rounds` seconds alone. On a shared machine whose background load drifts, every
 * target sees the same drift, so their ratios hold better than with one long window each. A
 * target is an HTTP load or an in-process loop (a floor), so a service and its floor alternate too.
 */
export async function measureRounds(loads: (LoadOptions | LoopLoad)[], rounds: number): Promise<Measurement[]> {
  for (const load of loads) if (load.warmup && load.warmup > 0) await runOnce(load, load.warmup);
  const runs: RawRun[][] = loads.map(() => []);
  const samples: ProcessSample[][][] = loads.map(() => []);
  const machine: MachineSample[][] = loads.map(() => []);
  const generatorCpuUs = loads.map(() => 0);
  for (let r = 0; r < rounds; r++) {
    for (const [i, load] of loads.entries()) {
      const targets = load.targets;
      const sampler = targets ? sampleProcesses(targets.map((t) => t.pid)) : null;
      const machineSampler = sampleMachine();
      const generatorStart = process.cpuUsage();
      runs[i]!.push(await runOnce(load, load.duration / rounds));
      const generator = process.cpuUsage(generatorStart);
      generatorCpuUs[i]! += generator.user + generator.system;
      machine[i]!.push(machineSampler.stop());
      if (sampler) samples[i]!.push(sampler.stop());
    }
  }
  return loads.map((load, i) => {
    const parts = runs[i]!;
    const merged: RawRun = {
      latencies: parts.flatMap((p) => p.latencies),
      requests: parts.reduce((n, p) => n + p.requests, 0),
      errors: parts.reduce((n, p) => n + p.errors, 0),
      non2xx: parts.reduce((n, p) => n + p.non2xx, 0),
      statusCodes: {},
      seconds: parts.reduce((n, p) => n + p.seconds, 0),
    };
    for (const p of parts) for (const [code, count] of Object.entries(p.statusCodes)) merged.statusCodes[code] = (merged.statusCodes[code] ?? 0) + count;
    const windows = samples[i]!;
    const perProcess = windows.length
      ? windows[0]!.map((_, j) => ({
          peakRssMb: Math.max(...windows.map((w) => w[j]!.peakRssMb)),
          hwmMb: Math.max(...windows.map((w) => w[j]!.hwmMb)),
          cpuCores: windows.reduce((sum, w) => sum + w[j]!.cpuCores, 0) / windows.length,
        }))
      : null;
    const machineRounds = machine[i]!;
    const postgres = machineRounds.map((w) => w.postgresCores).filter((c): c is number => c !== null);
    const roundCpuMsPerReq = windows.length
      ? windows.map((w, r) => (w.reduce((sum, p) => sum + p.cpuCores, 0) * parts[r]!.seconds * 1000) / Math.max(parts[r]!.requests, 1))
      : undefined;
    return {
      ...summarize(load.label, merged, perProcess),
      roundCpuMsPerReq,
      loadGeneratorCpuMsPerReq: generatorCpuUs[i]! / 1000 / Math.max(merged.requests, 1),
      machine: {
        // Null when no round saw a local Postgres server (a remote BENCH_DATABASE_SERVER).
        postgresCores: postgres.length === machineRounds.length ? mean(postgres) : null,
        busyCores: mean(machineRounds.map((w) => w.busyCores)),
      },
    };
  });
}

/**
 * Several loads at once (the mixed scenario): each gets its own autocannon instance and its own
 * counts; memory and CPU are sampled over all targets for the whole window.
 */
export async function measureTogether(loads: LoadOptions[], targets: Target[]): Promise<{ each: Measurement[]; peakRssMb: number[]; cpuCores: number[] }> {
  const sampler = sampleProcesses(targets.map((t) => t.pid));
  const runs = await Promise.all(loads.map((l) => fire(l, l.duration)));
  const samples = sampler.stop();
  return {
    each: runs.map((run, i) => summarize(loads[i]!.label, run, null)),
    peakRssMb: samples.map((s) => s.peakRssMb),
    cpuCores: samples.map((s) => s.cpuCores),
  };
}

/**
 * A floor measured without HTTP: `work` (one operation straight on the database) run by
 * `concurrency` loops for `seconds`, timed per operation like a request.
 */
export async function measureLoop(label: string, concurrency: number, seconds: number, work: () => Promise<void>, warmup = 1): Promise<Measurement> {
  const loop = async (until: number, latencies: number[] | null) => {
    let errors = 0;
    while (Date.now() < until) {
      const t0 = process.hrtime.bigint();
      try {
        await work();
        latencies?.push(Number(process.hrtime.bigint() - t0) / 1e6);
      } catch {
        errors++;
      }
    }
    return errors;
  };
  if (warmup > 0) {
    const until = Date.now() + warmup * 1000;
    await Promise.all(Array.from({ length: concurrency }, () => loop(until, null)));
  }
  const latencies: number[] = [];
  const started = process.hrtime.bigint();
  const until = Date.now() + seconds * 1000;
  const errors = (await Promise.all(Array.from({ length: concurrency }, () => loop(until, latencies)))).reduce((a, b) => a + b, 0);
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  return summarize(label, { latencies, requests: latencies.length, errors, non2xx: 0, statusCodes: {}, seconds: elapsed }, null);
}
