import { Hono } from 'hono';
import { etagMatches } from '../files/range.ts';
import type { SeEnv, SeServices } from './context.ts';

/** `GET /api/v1/capacity`: the CapacityReport with a strong ETag; `304` on a matching `If-None-Match`. */
export function capacityRoutes(s: SeServices): Hono<SeEnv> {
  const app = new Hono<SeEnv>();
  app.get('/api/v1/capacity', async (c) => {
    const { report, etag } = await s.capacity.snapshot();
    c.header('ETag', etag);
    c.header('Cache-Control', 'no-cache');
    if (etagMatches(c.req.header('if-none-match'), etag)) return c.body(null, 304);
    return c.json(report);
  });
  return app;
}
