import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import path from 'node:path';
import type { Measurement } from './load';
import { ROOT } from './procs';

export interface Check {
  /** What is compared, e.g. "throughput service / baseline". */
  name: string;
  value: number;
  /** Human form of the target, e.g. ">= 0.9". */
  target: string;
  met: boolean;
}

export interface ScenarioResult {
  id: string;
  title: string;
  /** Setup facts: connections, data sizes, what the baseline is. */
  setup: string[];
  rows: Measurement[];
  checks: Check[];
  notes: string[];
  /** Set when the scenario could not run (e.g. its routes are not built yet). */
  skipped?: string;
  failed?: string;
}

const fmt = (n: number | null | undefined, digits = 1) => (n === null || n === undefined || Number.isNaN(n) ? '—' : n.toFixed(digits));

export function check(name: string, value: number, op: '>=' | '<=', bound: number): Check {
  return { name, value, target: `${op} ${bound}`, met: op === '>=' ? value >= bound : value <= bound };
}

/** An extra figure: one decimal, but three significant digits below 10 (CPU ms per request: 0.2 hid 0.16-0.25). */
function formatExtra(v: number): number {
  if (Number.isInteger(v)) return v;
  return Math.abs(v) >= 10 ? Number(v.toFixed(1)) : Number(v.toPrecision(3));
}

/** Markdown table of a scenario's rows (printed to the console and pasted into the README). */
export function table(rows: Measurement[]): string {
  const head = '| target | req/s | p50 ms | p99 ms | requests | errors | non-2xx | peak RSS MB | CPU cores | extra |';
  const rule = '|---|---:|---:|---:|---:|---:|---:|---:|---:|---|';
  const lines = rows.map((r) => {
    const extra = Object.entries(r.extra ?? {})
      .map(([k, v]) => `${k}=${typeof v === 'number' ? formatExtra(v) : v}`)
      .join(', ');
    return `| ${r.label} | ${fmt(r.rps, 0)} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} | ${r.requests} | ${r.errors} | ${r.non2xx} | ${fmt(r.peakRssMb, 0)} | ${fmt(r.cpuCores, 2)} | ${extra} |`;
  });
  return [head, rule, ...lines].join('\n');
}

export function renderScenario(s: ScenarioResult): string {
  const out = [`### ${s.id}. ${s.title}`, ''];
  for (const line of s.setup) out.push(`- ${line}`);
  if (s.setup.length) out.push('');
  if (s.skipped) {
    out.push(`Skipped: ${s.skipped}`, '');
    return out.join('\n');
  }
  if (s.failed) out.push(`FAILED: ${s.failed}`, '');
  if (s.rows.length) out.push(table(s.rows), '');
  for (const c of s.checks) out.push(`- ${c.met ? 'MET   ' : 'MISSED'} ${c.name}: ${c.value.toFixed(2)} (target ${c.target})`);
  for (const n of s.notes) out.push(`- ${n}`);
  out.push('');
  return out.join('\n');
}

export function machine(): string {
  return `${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown'}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`;
}

/** Writes the run as JSON and markdown under bench/results/ (ignored by git). */
export function saveResults(results: ScenarioResult[], header: string[]): string {
  const dir = path.join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const markdown = [...header, '', ...results.map(renderScenario)].join('\n');
  writeFileSync(path.join(dir, `${stamp}.json`), JSON.stringify({ header, results }, null, 2));
  writeFileSync(path.join(dir, `${stamp}.md`), markdown);
  writeFileSync(path.join(dir, 'latest.md'), markdown);
  return path.join(dir, `${stamp}.md`);
}
