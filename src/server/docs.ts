import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Router, type Request, type RequestHandler, type Response } from 'express';
import { contract } from './openapi';

/**
 * The published contract for client teams: JSON, YAML, and a reference page (Swagger UI) served
 * from local assets. Each is built on the first request for it, not at start: most service
 * processes never serve them; so are the libraries (swagger-ui-express, yaml, compression).
 *
 * What a reader's browser gets (docs/running-the-service.md "The reference page"):
 * - compressed (br or gzip, the `compression` middleware, on this layer only: the API's answers
 *   are not): Swagger UI's scripts are 2 MB as files, about 0.5 MB compressed;
 * - cached: Swagger UI's files (named by the installed swagger-ui-dist) for a day, then
 *   revalidated by their ETag; the page, its start script and the contract revalidated on every
 *   load (`no-cache` and an ETag: 304, no body, while the contract is the same);
 * - a Content-Security-Policy that lets the page run and nothing else: scripts and styles from
 *   this origin only (the page's inline styles by their hashes), requests (the contract, "Try it
 *   out") to this origin only, no frames, no plugins.
 *
 * Every request passes this layer on its way to the API, so a path that cannot be a docs route is
 * sent on with one test instead of a walk through the router's routes. DOCS_PATH is a superset of
 * what those routes match (any case, an optional trailing slash, anything under /docs), so the
 * router still decides for everything it could answer.
 */
const DOCS_PATH = /^\/(?:openapi\.(?:json|yaml)\/?|docs(?:\/.*)?)$/i;
const TITLE = 'Organization Control-Plane API';
/** swagger-ui-dist's own files (scripts, styles, icons): the same until the package is upgraded. */
const ASSET = /\.(?:js|css|png|map)$/i;
const ASSET_CACHE = 'public, max-age=86400';

interface Served {
  type: string;
  text: string;
  etag: string;
}

function served(type: string, text: string): Served {
  return { type, text, etag: `"${createHash('sha256').update(text).digest('base64url').slice(0, 27)}"` };
}

/** A text that changes only with a deploy: revalidated on every use, 304 while it is the same. */
function sendRevalidated(req: Request, res: Response, doc: Served): void {
  res.setHeader('Cache-Control', 'no-cache');
  res.setHeader('ETag', doc.etag);
  if (req.fresh) {
    res.status(304).end();
    return;
  }
  res.type(doc.type).send(doc.text);
}

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

/**
 * The policy for the page swagger-ui-express writes: its inline `<style>` blocks and `style`
 * attributes, and the `<style>` elements Swagger UI's scripts render (its logo's), allowed by their
 * hashes, read off the page and the scripts themselves (so an upgrade that changes them changes
 * the policy with them); everything else from this origin.
 */
export function docsPolicy(html: string, scripts: string[]): string {
  const rendered = scripts.flatMap((js) => [...js.matchAll(/createElement\("style",null,"((?:\\.|[^"\\])*)"\)/g)].map((m) => JSON.parse(`"${m[1]!}"`) as string));
  const blocks = [...[...html.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((m) => m[1]!), ...rendered].map(sha256);
  const attributes = [...new Set([...html.matchAll(/\sstyle="([^"]*)"/g)].map((m) => sha256(m[1]!)))];
  return [
    "default-src 'none'",
    "script-src 'self'",
    `style-src 'self' ${[...new Set(blocks)].join(' ')}`.trim(),
    attributes.length > 0 ? `style-src-attr 'unsafe-hashes' ${attributes.join(' ')}` : "style-src-attr 'none'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "form-action 'self'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** The scripts of swagger-ui-dist the page loads, as swagger-ui-express resolves the package. */
function swaggerUiScripts(html: string): string[] {
  const dist = path.dirname(require.resolve('swagger-ui-dist/absolute-path', { paths: [path.dirname(require.resolve('swagger-ui-express'))] }));
  return [...html.matchAll(/<script src="\.\/([\w.-]+\.js)">/g)]
    .map((m) => path.join(dist, m[1]!))
    .filter((file) => existsSync(file))
    .map((file) => readFileSync(file, 'utf8'));
}

/** /docs: Swagger UI's page, its start script (which loads ../openapi.json) and its files. */
function docsPage(): Router {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const swaggerUi = require('swagger-ui-express') as typeof import('swagger-ui-express');
  // The page loads the contract from /openapi.json (relative: a proxy's path prefix is kept), not
  // from a copy of it inside the start script.
  const options = { customSiteTitle: TITLE, swaggerOptions: { url: '../openapi.json' } };
  const html = swaggerUi.generateHTML(undefined, options);
  const page = served('text/html', html);
  const policy = docsPolicy(html, swaggerUiScripts(html));
  const docs = Router();
  docs.use((req, res, next) => {
    res.setHeader('Cache-Control', ASSET.test(req.path) && !req.path.endsWith('/swagger-ui-init.js') ? ASSET_CACHE : 'no-cache');
    next();
  });
  // The start script, then swagger-ui-dist's files (express.static: ETag, Last-Modified; /docs → /docs/).
  docs.use(swaggerUi.serveFiles(undefined, options));
  docs.get('/', (req, res) => {
    res.setHeader('Content-Security-Policy', policy);
    sendRevalidated(req, res, page);
  });
  return docs;
}

export function docsRouter(): RequestHandler {
  const router = Router();
  let json: Served | undefined;
  let yaml: Served | undefined;
  router.get('/openapi.json', (req, res) => {
    json ??= served('application/json', JSON.stringify(contract));
    sendRevalidated(req, res, json);
  });
  router.get('/openapi.yaml', (req, res) => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    yaml ??= served('application/yaml', (require('yaml') as typeof import('yaml')).stringify(contract));
    sendRevalidated(req, res, yaml);
  });
  let docs: Router | undefined;
  router.use('/docs', (req, res, next) => {
    docs ??= docsPage();
    docs(req, res, next);
  });
  let compress: RequestHandler | undefined;
  const compressed: RequestHandler = (req, res, next) => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    compress ??= (require('compression') as typeof import('compression'))();
    compress(req, res, (err?: unknown) => (err ? next(err) : router(req, res, next)));
  };
  return (req, res, next) => (DOCS_PATH.test(req.path) ? compressed(req, res, next) : next());
}
