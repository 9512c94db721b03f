import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';

const swaggerUiDirectory = path.dirname(
  createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'),
);

/** Served from the package, so the reference works without internet access. */
const ASSETS = new Map<string, { file: string; type: string }>([
  ['swagger-ui.css', { file: 'swagger-ui.css', type: 'text/css; charset=utf-8' }],
  ['swagger-ui-bundle.js', { file: 'swagger-ui-bundle.js', type: 'text/javascript; charset=utf-8' }],
]);

const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
].join('; ');

function page(prefix: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Workspace API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="${prefix}/docs/assets/swagger-ui.css">
</head><body><div id="reference"></div>
<script src="${prefix}/docs/assets/swagger-ui-bundle.js"></script>
<script src="${prefix}/docs/assets/init.js"></script>
</body></html>`;
}

/**
 * Loads the document, then lists the origin the page was loaded from as the first server, so that
 * "Try it out" calls the host the browser is talking to (127.0.0.1, localhost, another name of the
 * service), whatever BASE_URL the document names.
 */
function initScript(prefix: string): string {
  return `const here = { url: window.location.origin, description: 'this host' };
fetch(${JSON.stringify(`${prefix}/openapi.json`)}, { headers: { accept: 'application/json' } })
  .then((response) => response.json())
  .then((spec) => {
    spec.servers = [here, ...(spec.servers || []).filter((server) => server.url !== here.url)];
    window.ui = SwaggerUIBundle({
      spec,
      dom_id: '#reference',
      deepLinking: true,
      persistAuthorization: false,
      validatorUrl: null,
      tryItOutEnabled: true
    });
  });
`;
}

/**
 * The interactive reference of the REST API (Swagger UI over /openapi.json). A page for people,
 * not part of the API, so it is registered outside the documented scope.
 */
export function registerApiDocsPage(app: FastifyInstance, prefix: string): void {
  const cache = new Map<string, Buffer>();
  const html = (reply: FastifyReply) =>
    reply.header('content-security-policy', CONTENT_SECURITY_POLICY).header('cache-control', 'no-cache');

  app.get(`${prefix}/docs`, async (_request, reply) =>
    html(reply).type('text/html; charset=utf-8').send(page(prefix)),
  );
  app.get(`${prefix}/docs/assets/init.js`, async (_request, reply) =>
    reply.type('text/javascript; charset=utf-8').header('cache-control', 'no-cache').send(initScript(prefix)),
  );
  app.get<{ Params: { name: string } }>(`${prefix}/docs/assets/:name`, async (request, reply) => {
    const asset = ASSETS.get(request.params.name);
    if (!asset) return reply.callNotFound();
    let body = cache.get(asset.file);
    if (!body) {
      body = await readFile(path.join(swaggerUiDirectory, asset.file));
      cache.set(asset.file, body);
    }
    return reply.type(asset.type).header('cache-control', 'public, max-age=86400').send(body);
  });
}
