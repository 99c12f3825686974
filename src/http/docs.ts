import { Router } from 'express';
import { contract } from './openapi';

/**
 * The published contract for client teams: JSON, YAML, and a reference page served from local
 * assets. The YAML text and swagger-ui (their code, and their copies of the contract) are built on
 * the first request for them, not at start: most service processes never serve them.
 */
export function docsRouter(): Router {
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
  return router;
}
