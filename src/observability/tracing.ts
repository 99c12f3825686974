import type * as Api from '@opentelemetry/api';

/**
 * OpenTelemetry traces (docs/running-the-service.md#traces), through the official Node SDK and its instrumentations
 * (http, pg, undici), configured only by the standard OTEL_* variables. Off unless
 * OTEL_TRACES_EXPORTER (other than `none`) or an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT,
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set; then src/observability/start-tracing.ts, the first
 * import of main.ts, starts the SDK before http and pg are loaded, and fills `tracing`. With
 * tracing off nothing of OpenTelemetry is loaded and the places below cost a null check.
 */
export interface Tracing {
  /** The active span's W3C `traceparent`, stored with a queued job (webhook delivery, mail). */
  current(): string | null;
  /**
   * Runs a job's work in a span whose parent is the request that queued it (its stored
   * `traceparent`), so the outbound call it makes is that span's child and carries its context.
   */
  inJobSpan<T>(name: string, traceContext: string | null, attributes: Api.Attributes, work: () => Promise<T>): Promise<T>;
  /** The active span's ids for a log line. */
  logIds(): { trace_id?: string; span_id?: string };
  shutdown(): Promise<void>;
}

export let tracing: Tracing | null = null;

export function setTracing(value: Tracing | null): void {
  tracing = value;
}

/** Whether the standard variables ask for traces (OTEL_SDK_DISABLED=true turns them off). */
export function tracesConfigured(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.toLowerCase() === 'true') return false;
  const exporter = env.OTEL_TRACES_EXPORTER?.trim();
  if (exporter) return exporter !== 'none';
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/** Only `traceparent` as W3C defines it: a stored value is never trusted further. */
const TRACEPARENT = /^[\da-f]{2}-[\da-f]{32}-[\da-f]{16}-[\da-f]{2}$/;

export function validTraceparent(value: string | null | undefined): value is string {
  return typeof value === 'string' && TRACEPARENT.test(value);
}
