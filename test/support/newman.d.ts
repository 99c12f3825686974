// newman ships no types; this declares the small part the SCIM conformance test uses.
declare module 'newman' {
  export interface NewmanFailure {
    error: { name: string; message: string; test?: string };
    source?: { name?: string };
  }
  export interface NewmanExecution {
    item: { name: string };
    request: { method: string; url: { toString(): string } };
    response?: { code: number; stream?: Buffer };
  }
  export interface NewmanSummary {
    run: { failures: NewmanFailure[]; executions: NewmanExecution[]; stats: { assertions: { total: number; failed: number }; requests: { total: number } } };
  }
  export function run(
    options: { collection: unknown; envVar?: { key: string; value: string }[]; reporters?: string[]; timeoutRequest?: number },
    callback: (err: Error | null, summary: NewmanSummary) => void,
  ): unknown;
}
