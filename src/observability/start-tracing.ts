import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTracing, tracesConfigured, validTraceparent, tracing, type Tracing } from './tracing';

/*
 * Imported first by main.ts, for its side effect: when the OTEL_* variables ask for traces, the
 * OpenTelemetry Node SDK starts here, before any module loads http or pg, so its instrumentations
 * can wrap them. Nothing is loaded otherwise.
 */
if (tracesConfigured(process.env)) setTracing(startTracing());

export { tracing };

/** What the router left on the response (src/server/router.ts): the route template and operation. */
interface RouteLocals {
  route?: string;
  operationId?: string;
  organizationId?: string;
}

function startTracing(): Tracing {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const api = require('@opentelemetry/api') as typeof import('@opentelemetry/api');
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof import('@opentelemetry/sdk-node');
  const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http') as typeof import('@opentelemetry/instrumentation-http');
  const { PgInstrumentation } = require('@opentelemetry/instrumentation-pg') as typeof import('@opentelemetry/instrumentation-pg');
  const { UndiciInstrumentation } = require('@opentelemetry/instrumentation-undici') as typeof import('@opentelemetry/instrumentation-undici');
  /* eslint-enable @typescript-eslint/no-require-imports */
  process.env.OTEL_SERVICE_NAME ||= 'org-control-plane';
  // Traces only: metrics are Prometheus's (METRICS_PORT), logs are the JSON lines on stdout.
  process.env.OTEL_METRICS_EXPORTER ||= 'none';
  process.env.OTEL_LOGS_EXPORTER ||= 'none';

  const sdk = new NodeSDK({
    instrumentations: [
      new HttpInstrumentation({
        // Route template, operation and organization; headers and bodies are never recorded.
        applyCustomAttributesOnSpan: (span, request, response) => {
          // The query string (url.query) is blanked: it can carry OAuth codes and tokens.
          if ((request as IncomingMessage).url?.includes('?')) span.setAttribute('url.query', '');
          const locals = (response as ServerResponse & { locals?: RouteLocals }).locals;
          if (!locals?.route) return;
          // `{method} {route template}`: never the path with its ids.
          span.updateName(locals.route);
          span.setAttribute('http.route', locals.route.slice(locals.route.indexOf(' ') + 1));
          if (locals.operationId) span.setAttribute('operation_id', locals.operationId);
          if (locals.organizationId) span.setAttribute('org.id', locals.organizationId);
        },
        // Probes would be most of the traces and say nothing.
        ignoreIncomingRequestHook: (request) => request.url === '/health' || request.url === '/ready',
        // Outbound calls go through undici (src/outbound), traced by its own instrumentation.
        disableOutgoingRequestInstrumentation: true,
      }),
      // Statements of a request or a job only (the job runner's polls would each be a trace of their
      // own), and no span per pool checkout: half the spans, none of them telling anything.
      new PgInstrumentation({ enhancedDatabaseReporting: false, requireParentSpan: true, ignoreConnectSpans: true }),
      new UndiciInstrumentation({
        // Tenant URLs may hold secrets in their query string: the span keeps origin and path.
        startSpanHook: (request) => ({ 'url.full': `${request.origin}${request.path.split('?')[0]}`, 'url.query': '' }),
      }),
    ],
  });
  sdk.start();

  const tracer = api.trace.getTracer('org-control-plane');
  return {
    current() {
      const carrier: Record<string, string> = {};
      api.propagation.inject(api.context.active(), carrier);
      return validTraceparent(carrier.traceparent) ? carrier.traceparent : null;
    },
    inJobSpan(name, traceContext, attributes, work) {
      const parent = validTraceparent(traceContext) ? api.propagation.extract(api.ROOT_CONTEXT, { traceparent: traceContext }) : api.ROOT_CONTEXT;
      return tracer.startActiveSpan(name, { kind: api.SpanKind.CONSUMER, attributes }, parent, async (span) => {
        try {
          return await work();
        } catch (err) {
          span.setStatus({ code: api.SpanStatusCode.ERROR });
          throw err;
        } finally {
          span.end();
        }
      });
    },
    logIds() {
      const span = api.trace.getSpan(api.context.active());
      if (!span) return {};
      const { traceId, spanId } = span.spanContext();
      return { trace_id: traceId, span_id: spanId };
    },
    shutdown: () => sdk.shutdown(),
  };
}
