import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

/**
 * What the deploy tests read from the files an operator ships: compose.yaml (with compose's own
 * `${VAR}` interpolation for the forms it uses) and the Dockerfile's runtime stage. Images cannot
 * be built or pulled where CI runs, so the tests run what these files describe as processes.
 */
const ROOT = path.resolve(__dirname, '..', '..');

export interface ComposeService {
  environment?: Record<string, string>;
  expose?: string[];
  volumes?: string[];
  healthcheck?: unknown;
}

export const compose = parse(readFileSync(path.join(ROOT, 'compose.yaml'), 'utf8'), { merge: true }) as {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
};

/** `${VAR:?message}` needs VAR; `${VAR:-default}` falls back: compose's interpolation, for the values used here. */
export function interpolate(value: string, vars: Record<string, string>): string {
  return value.replace(/\$\{(\w+)(?::([?-])([^}]*))?\}/g, (_m, name: string, op?: string, arg?: string) => {
    if (vars[name] !== undefined) return vars[name]!;
    if (op === '-') return arg ?? '';
    throw new Error(`compose.yaml needs ${name}: ${arg}`);
  });
}

/** A compose service's environment with `vars` as the operator's environment (or .env file). */
export function composeEnvironment(service: string, vars: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(compose.services[service]!.environment!).map(([k, v]) => [k, interpolate(String(v), vars)]));
}

export interface RuntimeStage {
  /** The stage's FROM image, e.g. `node:24-slim`. */
  from: string;
  workdir: string;
  env: Record<string, string>;
  /** Directories a RUN line makes and gives to `user` (`mkdir -p … && chown user:user …`). */
  ownedDirs: string[];
  user: string;
  cmd: string[];
}

/** Every FROM image of the Dockerfile (build and runtime stages). */
export function dockerfileImages(): string[] {
  return [...readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8').matchAll(/^FROM\s+(\S+)/gm)].map((m) => m[1]!);
}

/** The Dockerfile's last stage, as the container runs it. */
export function runtimeStage(): RuntimeStage {
  const text = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  const lines = text.slice(text.lastIndexOf('\nFROM ') + 1).split('\n').filter((l) => !/^\s*#/.test(l));
  const stage: RuntimeStage = { from: '', workdir: '/', env: {}, ownedDirs: [], user: 'root', cmd: [] };
  const chowned: { user: string; dirs: string[] }[] = [];
  for (const line of lines) {
    const [, instruction, rest = ''] = /^(\w+)\s+(.*)$/.exec(line.trim()) ?? [];
    if (instruction === 'FROM') stage.from = rest.split(/\s+/)[0]!;
    if (instruction === 'WORKDIR') stage.workdir = rest.trim();
    if (instruction === 'USER') stage.user = rest.trim();
    if (instruction === 'CMD') stage.cmd = JSON.parse(rest) as string[];
    if (instruction === 'ENV') for (const m of rest.matchAll(/(\w+)=(\S+)/g)) stage.env[m[1]!] = m[2]!;
    if (instruction === 'RUN') for (const m of rest.matchAll(/chown (?:-R )?(\w+):\S+((?: \/[^\s&;]+)+)/g)) chowned.push({ user: m[1]!, dirs: m[2]!.trim().split(' ') });
  }
  stage.ownedDirs = chowned.filter((c) => c.user === stage.user).flatMap((c) => c.dirs);
  return stage;
}
