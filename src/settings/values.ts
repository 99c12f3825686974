import { parseAllowedNetworks } from '../outbound/policy';
import type { RateLimitRule } from './types';

/**
 * How a variable's text becomes a value: numbers, on/off words, URLs, durations, rate limits,
 * networks and origins. Each parser throws a SettingsError naming the variable.
 */
export class SettingsError extends Error {}

export type Env = Record<string, string | undefined>;

export function int(env: Env, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min) throw new SettingsError(`${name} must be a whole number >= ${min}, got "${raw}"`);
  return Number(raw);
}

/** The words an on/off setting accepts (lower case). */
export const ON_WORDS = ['1', 'true', 'on', 'yes'];
export const OFF_WORDS = ['0', 'false', 'off', 'no'];

export function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (ON_WORDS.includes(raw)) return true;
  if (OFF_WORDS.includes(raw)) return false;
  throw new SettingsError(`${name} must be on/off (true/false), got "${env[name]}"`);
}

export function url(env: Env, name: string, fallback: string): string {
  const raw = env[name] || fallback;
  try {
    const parsed = new URL(raw);
    if (!['http:', 'https:'].includes(parsed.protocol)) throw new Error();
  } catch {
    throw new SettingsError(`${name} must be an http(s) URL, got "${raw}"`);
  }
  return raw.replace(/\/+$/, '');
}

const DURATION = /^(\d+)\s*(ms|s|m|h|d)?$/;
export const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Durations accept a number of seconds or a unit: `30d`, `12h`, `900s`, `500ms`. */
export function duration(env: Env, name: string, fallbackMs: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallbackMs;
  const match = DURATION.exec(raw.trim());
  if (!match || Number(match[1]) <= 0) throw new SettingsError(`${name} must be a positive duration like 30d, 12h or 3600 (seconds), got "${raw}"`);
  return Number(match[1]) * UNIT_MS[match[2] ?? 's']!;
}

/** `10/15m` (10 per 15 minutes), `30/1h`, or `off`. */
export function rateLimit(env: Env, name: string, fallback: string): RateLimitRule | null {
  const raw = (env[name] || fallback).trim();
  if (raw.toLowerCase() === 'off') return null;
  const [count, window] = raw.split('/');
  const match = window === undefined ? null : DURATION.exec(window.trim());
  if (!count || !/^\d+$/.test(count.trim()) || Number(count) < 1 || !match || Number(match[1]) <= 0) {
    throw new SettingsError(`${name} must look like 10/15m (points per window) or off, got "${raw}"`);
  }
  return { points: Number(count), windowMs: Number(match[1]) * UNIT_MS[match[2] ?? 's']! };
}

export function networks(env: Env, name: string): string[] {
  try {
    return parseAllowedNetworks(env[name]);
  } catch (err) {
    throw new SettingsError(`${name} must be comma-separated CIDRs: ${(err as Error).message}`);
  }
}

/** Comma-separated origins (`https://app.example.com`): scheme, host and port only. */
export function origins(env: Env, name: string): string[] {
  const entries = (env[name] ?? '').split(',').map((e) => e.trim()).filter(Boolean);
  return entries.map((entry) => {
    let parsed: URL;
    try {
      parsed = new URL(entry);
    } catch {
      throw new SettingsError(`${name} must be comma-separated origins like https://app.example.com, got "${entry}"`);
    }
    if (!['http:', 'https:'].includes(parsed.protocol) || parsed.origin !== entry.replace(/\/+$/, '')) {
      throw new SettingsError(`${name} must be comma-separated origins like https://app.example.com (no path), got "${entry}"`);
    }
    return parsed.origin;
  });
}
