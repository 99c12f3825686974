/**
 * The process's own state that /ready reports: set once SIGTERM starts the shutdown (main.ts), so
 * a load balancer stops sending new requests while in-flight ones finish.
 */
let shuttingDown = false;

export function markShuttingDown(): void {
  shuttingDown = true;
}

export function isShuttingDown(): boolean {
  return shuttingDown;
}
