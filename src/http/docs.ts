import { Router } from 'express';
import swaggerUi from 'swagger-ui-express';
import { stringify } from 'yaml';
import { contract } from './openapi';

/** The published contract for client teams: JSON, YAML, and a reference page served from local assets. */
export function docsRouter(): Router {
  const router = Router();
  const yamlText = stringify(contract);
  router.get('/openapi.json', (_req, res) => {
    res.json(contract);
  });
  router.get('/openapi.yaml', (_req, res) => {
    res.type('application/yaml').send(yamlText);
  });
  router.use('/docs', swaggerUi.serveFiles(contract), swaggerUi.setup(contract, { customSiteTitle: 'Organization Control-Plane API' }));
  return router;
}
