import express, { type NextFunction, type Request, type Response } from 'express';
import cors from 'cors';
import helmet from 'helmet';
import type { Logger } from 'pino';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema';
import type { Settings } from '../settings';
import type { Clock } from '../lib/clock';
import { Cursors } from '../lib/pagination';
import { SecretBox, deriveKey } from '../lib/crypto';
import { Invalid, PayloadTooLarge, UnsupportedMediaType, type AppError } from '../lib/errors';
import { createApi, type Api } from './router';
import { send } from './send';
import { errorToResult, resultOf } from './errors';
import { docsRouter } from './docs';
import { requestLogger } from './logging';
import { dialects, fronts, handlers } from './registry';
import { dialectOf } from './dialects';
import { contract } from './openapi';
import type { AppDeps } from '../domain/deps';
import type { AnyPrincipal } from '../domain/principal';
import type { FrontTools } from '../contract/fronts';
import { contextOfRequest } from '../domain/audit-context';
import { createOutbound, type Outbound } from '../outbound';
import { jsonShapeProblem, type ShapeProblem } from '../lib/json-shape';
import { setEventHook } from '../audit/event-hook';
import { webhookDeliveries } from '../webhooks/queue';
import { addLifecycleListener } from '../org/lifecycle-listeners';
import { auditStreamLifecycle } from '../audit-streams/lifecycle';
import { webhookLifecycle } from '../webhooks/lifecycle';

export interface AppOptions {
  db: Kysely<DB>;
  clock: Clock;
  logger: Logger;
  fetch: typeof fetch;
  /** Client for tenant-supplied URLs; by default built from settings.outboundAllowedNetworks. */
  outbound?: Outbound;
  settings: Settings;
  /** Check every response against the spec (on in tests). */
  validateResponses?: boolean;
  /**
   * Compile every request (and, with validateResponses, response) validator before the first
   * request: on for the service, so a broken schema fails the start. Tests turn it off: each
   * validator is compiled on first use, once per process (test/seams/validator-parity compiles all).
   */
  compileValidatorsAtStart?: boolean;
  /** Called once the API router is ready to serve (its contract loaded, its validators compiled). */
  onReady?: () => void;
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const FORM_TYPE = 'application/x-www-form-urlencoded';

/** Operations of the contract whose body is a form (SAML's HTTP-POST binding: SAMLResponse, RelayState). */
function contractFormPaths(): string[] {
  const paths: string[] = [];
  for (const [path, item] of Object.entries(contract.paths ?? {})) {
    for (const operation of Object.values(item ?? {})) {
      const content = (operation as { requestBody?: { content?: Record<string, unknown> } } | undefined)?.requestBody?.content;
      if (content && FORM_TYPE in content && !path.includes('{')) paths.push(path);
    }
  }
  return paths;
}

/** What services get, built once per app (tests call services with the same bag). */
export function createDeps(options: Omit<AppOptions, 'validateResponses'>): AppDeps {
  const { settings } = options;
  if (!settings.secretKey) throw new Error('createApp needs settings.secretKey');
  // Audited changes queue their webhook deliveries in the entry's own statement.
  setEventHook(webhookDeliveries);
  // Webhooks and audit streams stop while an organization is scheduled for deletion (src/org calls, never imports, them).
  addLifecycleListener(webhookLifecycle);
  addLifecycleListener(auditStreamLifecycle);
  return {
    db: options.db,
    clock: options.clock,
    logger: options.logger,
    fetch: options.fetch,
    outbound: options.outbound ?? createOutbound({ allowedNetworks: settings.outboundAllowedNetworks }),
    settings,
    cursors: new Cursors(deriveKey(settings.secretKey, 'cursor')),
    secrets: new SecretBox(settings.secretKey),
    audit: null,
  };
}

/**
 * One layer for request bodies, passed straight through by requests without one (most reads): a
 * body must be JSON (or, on the SAML ACS route, a form), anything else is refused before parsing,
 * so it never reaches a handler.
 */
function bodyParser(limit: number, formPaths: ReadonlySet<string>, ownBodyPaths: ReadonlySet<string>, ownBodyPrefixes: readonly string[]) {
  // JSON can carry U+0000 only as the escape `\u0000`: one scan of the raw bytes lets the
  // router skip walking every string of a large body (see ./nul.ts).
  const verify = (_req: unknown, res: unknown, raw: Buffer) => {
    (res as Response).locals.bodyMayHoldNul = raw.includes('\\u0000');
  };
  const json = express.json({ limit, type: ['application/json', 'application/*+json'], verify });
  const untypedJson = express.json({ limit, type: () => true, verify });
  const form = express.urlencoded({ extended: false, limit, parameterLimit: 10 });
  return (req: Request, res: Response, next: NextFunction) => {
    const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
    if (!hasBody || ownBodyPaths.has(req.path) || ownBodyPrefixes.some((prefix) => req.path.startsWith(prefix))) return next();
    const isForm = formPaths.has(req.path);
    // A dialect may read an untyped body as JSON (SCIM: src/scim/dialect.ts).
    const untypedScim = req.headers['content-type'] === undefined && dialectOf(req.path)?.untypedBodyIsJson === true;
    const accepted = isForm ? [FORM_TYPE] : ['application/json', 'application/*+json'];
    if (BODY_METHODS.has(req.method) && !untypedScim && !req.is(accepted)) {
      next(Object.assign(new Error('unsupported media type'), { type: 'unsupported.media.type' }));
      return;
    }
    (isForm ? form : untypedScim ? untypedJson : json)(req, res, (err?: unknown) => {
      if (err) return next(err);
      // One check of every parsed body's keys, depth and size (src/lib/json-shape.ts).
      const problem = jsonShapeProblem(req.body);
      if (problem) return next(Object.assign(new Error(problem.message), { type: 'entity.shape', problem }));
      next();
    });
  };
}

/** The Express app, without listening: main.ts serves it, tests drive it with supertest. */
export function createApp(options: AppOptions): express.Express {
  const { settings, logger } = options;
  const deps = createDeps(options);

  const app = express();
  app.disable('x-powered-by');
  // No generated ETag: the contract declares none (templates set their own, which Express keeps),
  // and hashing every response body cost a sha1 per request.
  app.set('etag', false);
  app.set('trust proxy', settings.trustProxy);
  app.use(requestLogger(logger));
  app.use(helmet({ contentSecurityPolicy: false }));
  // cors with no allowed origin adds nothing to a response: the layer is there only when configured.
  if (settings.corsOrigins.length > 0) app.use(cors({ origin: settings.corsOrigins }));
  app.use(docsRouter());
  // Not app.use(basePath, …): Express would strip the base path from req.url, which a dialect's
  // spelling rewrite reads and sets whole.
  for (const dialect of dialects) {
    const before = dialect.before;
    if (before) app.use((req, res, next) => (dialectOf(req.path) === dialect ? before(req, res, next) : next()));
  }
  const served = fronts.filter((front) => front.enabled?.(settings) ?? true);
  const formPaths = new Set([...contractFormPaths(), ...served.flatMap((front) => front.formPaths ?? [])]);
  const ownBodyPaths = new Set(served.flatMap((front) => front.ownBodyPaths ?? []));
  const ownBodyPrefixes = served.flatMap((front) => front.ownBodyPrefixes ?? []);
  app.use(bodyParser(settings.bodyLimitBytes, formPaths, ownBodyPaths, ownBodyPrefixes));
  const api = createApi(deps, handlers, { validateResponses: options.validateResponses ?? false, compileValidatorsAtStart: options.compileValidatorsAtStart ?? true, onReady: options.onReady });
  // Fronts outside the contract's operations (the pages links open, the MCP endpoint, ...): src/contract/fronts.ts.
  const tools = frontTools(deps, api);
  for (const front of served) app.use(front.mount(tools));
  app.use(api.handler);

  // Body-parser failures carry a `type`; everything else goes through the one error mapper.
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const refusal = bodyRefusal(err, settings.bodyLimitBytes);
    send(res, refusal ? resultOf(refusal) : errorToResult(err, req.log ?? logger));
  });
  return app;
}

/** What a front gets from the server: the request's context, the one error mapper, the one way out, the API's own dispatch and check. */
function frontTools(deps: AppDeps, api: Api): FrontTools {
  return {
    deps,
    requestDeps: (req: Request, principal: AnyPrincipal | null) => ({
      ...deps,
      audit: contextOfRequest({ principal, requestId: String(req.id ?? ''), ip: req.ip ?? '', userAgent: req.get('user-agent'), clock: deps.clock, benchSkip: deps.settings.auditBenchDisable }),
    }),
    errorResult: errorToResult,
    send,
    invoke: api.invoke,
    refusal: (operationId, principal) => {
      const refused = api.refusal(operationId, principal);
      return refused ? resultOf(refused) : null;
    },
  };
}

/** A body the parser refused, as the error class it is answered with (null: not a body problem). */
function bodyRefusal(err: unknown, bodyLimitBytes: number): AppError | null {
  const type = (err as { type?: string }).type;
  if (type === 'entity.parse.failed') return Invalid.at(['body'], 'Malformed JSON body: send one JSON value.');
  if (type === 'entity.shape') {
    const { path, message } = (err as { problem: ShapeProblem }).problem;
    return new Invalid([{ path, message }], `${path.join('.')}: ${message}.`);
  }
  if (type === 'entity.too.large') return new PayloadTooLarge(`Body exceeds ${bodyLimitBytes} bytes.`);
  if (type === 'unsupported.media.type') return new UnsupportedMediaType();
  const status = (err as { status?: number }).status;
  if (type && status && status < 500) return Invalid.at(['body'], 'The body could not be read: send UTF-8 JSON.');
  return null;
}
