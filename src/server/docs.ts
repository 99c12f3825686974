import { Router, type RequestHandler } from 'express';
import { contract } from './openapi';

/**
 * The published contract for client teams: JSON, YAML, and a reference page served from local
 * assets. The YAML text and swagger-ui (their code, and their copies of the contract) are built on
 * the first request for them, not at start: most service processes never serve them.
 *
 * Every request passes this layer on its way to the API, so a path that cannot be a docs route is
 * sent on with one test instead of a walk through the router's routes. DOCS_PATH is a superset of
 * what those routes match (any case, an optional trailing slash, anything under /docs), so the
 * router still decides for everything it could answer.
 */
const DOCS_PATH = /^\/(?:openapi\.(?:json|yaml)\/?|docs(?:\/.*)?)$/i;

export function docsRouter(): RequestHandler {
  const router = Router();
  let yamlText: string | undefined;
  router.get('/openapi.json', (_req, res) => {
    res.json(contract);
  });
  router.get('/openapi.yaml', (_req, res) => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    yamlText ??= (require('yaml') as typeof import('yaml')).stringify(contract);
    res.type('application/yaml').send(yamlText);
  });
  let docs: Router | undefined;
  router.use('/docs', (req, res, next) => {
    if (!docs) {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const swaggerUi = require('swagger-ui-express') as typeof import('swagger-ui-express');
      docs = Router();
      docs.use(swaggerUi.serveFiles(contract), swaggerUi.setup(contract, { customSiteTitle: 'Organization Control-Plane API' }));
    }
    docs(req, res, next);
  });
  return (req, res, next) => (DOCS_PATH.test(req.path) ? router(req, res, next) : next());
}
