/**
 * OpenAPI 3 generated from the route schemas (@fastify/swagger), served at
 * /openapi.json, and the Swagger UI page at /docs (@fastify/swagger-ui, all
 * assets served locally). Both need a token unless publicDocs is set.
 */
import type { FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Access } from './routes.js';

export async function registerDocs(app: FastifyInstance, access: Access): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'tasklease HTTP API',
        version: '1',
        description: "Durable async tasks: user API, the seed's admin API, probes and metrics. Errors: { success: false, code, message, field?, requestId }.",
      },
      components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API token (tl_…) or, when configured, a JWT' } } },
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true, uiConfig: { persistAuthorization: false } });
  app.route({
    method: 'GET',
    url: '/openapi.json',
    config: { access },
    schema: { hide: true } as object,
    handler: async () => app.swagger(),
  });
}
