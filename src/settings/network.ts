/** Where the service listens and whom it trusts: HOST, BOOTSTRAP_ALLOW_OPEN, METRICS_PORT, TRUST_PROXY, DNS_SERVERS. */
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { TrustProxy } from './types';
import { bool, int, SettingsError, type Env } from './values';

const PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * TRUST_PROXY in the forms of Express's `trust proxy` that name the proxies: a hop count (`1`: one
 * load balancer) or addresses, CIDRs and proxy-addr's names (`10.0.0.0/8, loopback`). `on`/`true`
 * is refused: it would take the left-most X-Forwarded-For entry, which the client writes itself.
 */
export function trustProxy(env: Env): TrustProxy {
  const raw = (env.TRUST_PROXY ?? '').trim();
  const lower = raw.toLowerCase();
  if (['', '0', 'off', 'false', 'no'].includes(lower)) return false;
  if (['on', 'true', 'yes'].includes(lower)) {
    throw new SettingsError(
      `TRUST_PROXY=${raw} would trust the client's own left-most X-Forwarded-For entry, so per-IP limits and audit IPs could be forged; give the number of proxies in front of the service (e.g. 1) or their addresses (e.g. 10.0.0.0/8, loopback)`,
    );
  }
  if (/^\d+$/.test(raw)) return Number(raw);
  const entries = raw.split(',').map((e) => e.trim()).filter(Boolean);
  for (const entry of entries) {
    if (PROXY_NAMES.has(entry.toLowerCase())) continue;
    try {
      if (entry.includes('/')) ipaddr.parseCIDR(entry);
      else ipaddr.parse(entry);
    } catch {
      throw new SettingsError(`TRUST_PROXY must be a hop count or proxy addresses (IPs, CIDRs, loopback, linklocal, uniquelocal); "${entry}" is none of these`);
    }
  }
  return entries.map((e) => (PROXY_NAMES.has(e.toLowerCase()) ? e.toLowerCase() : e));
}

/**
 * `host[:port]` list of IP addresses (what node's Resolver#setServers takes): `1.1.1.1`,
 * `127.0.0.1:5353`, `::1`, `[::1]:5353`.
 */
export function dnsServers(env: Env): string[] {
  const entries = (env.DNS_SERVERS ?? '').split(',').map((e) => e.trim()).filter(Boolean);
  for (const entry of entries) {
    const m = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(entry) ?? (isIP(entry) === 6 ? [entry, entry] : /^([^:]+)(?::(\d{1,5}))?$/.exec(entry));
    const host = m?.[1];
    const port = m?.[2];
    if (!host || isIP(host) === 0 || (port !== undefined && (Number(port) < 1 || Number(port) > 65535))) {
      throw new SettingsError(`DNS_SERVERS must be comma-separated IP[:port] entries (e.g. 127.0.0.1:5353, [::1]:53), got "${entry}"`);
    }
  }
  return entries;
}

/** HOST: an IP address or `localhost` (what the listener binds; a name could resolve anywhere). */
export function listenHost(env: Env): string {
  const raw = (env.HOST ?? '').trim();
  if (raw === '') return '127.0.0.1';
  if (raw.toLowerCase() === 'localhost' || isIP(raw) !== 0) return raw;
  throw new SettingsError(`HOST must be an IP address to listen on (127.0.0.1, 0.0.0.0, ::) or localhost, got "${raw}"`);
}

function isLoopback(host: string): boolean {
  return host.toLowerCase() === 'localhost' || ipaddr.process(host).range() === 'loopback';
}

/**
 * Bootstrap without BOOTSTRAP_TOKEN makes the first caller of POST /v1/bootstrap a platform admin:
 * fine on loopback (whoever can call it is on this machine), refused on any other address unless
 * BOOTSTRAP_ALLOW_OPEN says the operator means it.
 */
export function bootstrapAllowOpen(env: Env, host: string, token: string | undefined): boolean {
  const allowed = bool(env, 'BOOTSTRAP_ALLOW_OPEN', false);
  if (!token && !allowed && !isLoopback(host)) {
    throw new SettingsError(
      `HOST=${host} is reachable from other machines and BOOTSTRAP_TOKEN is unset: the first caller of POST /v1/bootstrap would become platform admin. Set BOOTSTRAP_TOKEN (then send it as x-bootstrap-token), listen on loopback (HOST=127.0.0.1), or set BOOTSTRAP_ALLOW_OPEN=on`,
    );
  }
  return allowed;
}

export function metricsPort(env: Env, apiPort: number): number | undefined {
  if (!env.METRICS_PORT) return undefined;
  const port = int(env, 'METRICS_PORT', 0, 1);
  if (port > 65535) throw new SettingsError(`METRICS_PORT must be at most 65535, got "${env.METRICS_PORT}"`);
  if (port === apiPort) throw new SettingsError('METRICS_PORT must differ from PORT (metrics are never served with the API)');
  return port;
}
