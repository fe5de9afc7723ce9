import { bearerAuth, errorHandler, healthRoutes, metricsRoute, notFoundHandler } from '@polyvision/shared';
import { Hono } from 'hono';
import type { Registry } from 'prom-client';
import { capacityRoutes } from './capacity-routes.ts';
import type { SeEnv, SeServices } from './context.ts';
import { fileRoutes } from './file-routes.ts';
import { reservationRoutes } from './reservation-routes.ts';
import { uploadRoutes } from './upload-routes.ts';

/**
 * The SE's hono app. `GET /health/live` needs no token; every other route
 * needs `Authorization: Bearer <one of STORAGE_TOKENS>`. Errors are JSON
 * `{code, message}` through shared's `errorHandler`.
 */
export function createSeApp(s: SeServices, registry: Registry): Hono<SeEnv> {
  const app = new Hono<SeEnv>();
  app.onError(errorHandler({ logger: s.logger }));
  app.notFound(notFoundHandler);
  const auth = bearerAuth({ tokens: s.config.tokens, realm: 'polyvision-storage-element' });
  app.use('/health/ready', auth);
  app.route(
    '/',
    healthRoutes({
      ready: {
        backend: async () => {
          const failure = await s.capacity.failure();
          if (failure) throw new Error(failure);
        },
      },
    }),
  );
  app.use('*', auth);
  app.route('/', metricsRoute(registry));
  app.route('/', capacityRoutes(s));
  app.route('/', reservationRoutes(s));
  app.route('/', uploadRoutes(s));
  app.route('/', fileRoutes(s));
  return app;
}
