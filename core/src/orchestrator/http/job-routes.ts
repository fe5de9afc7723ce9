import { errorHandler, type JobStatus, PolyvisionError } from '@polyvision/shared';
import { Hono } from 'hono';
import type { Database } from '../../db/database.ts';
import { getJob, listJobs } from '../state/job-queries.ts';

/**
 * Read API of jobs (hono), mounted by whoever composes the service:
 * - `GET /api/v1/jobs/:id` → the job with its stages (status, `phase`:
 *   queued / waiting / running, attempts, progress, outputs, errors,
 *   `waiting_for`, timestamps); 404 `{code: 'job_not_found'}`.
 * - `GET /api/v1/jobs?status=&organization_id=&match_id=&limit=&cursor=` →
 *   `{jobs, next_cursor}`, newest first; 400 `{code: 'invalid_filter'}`.
 * Errors are `{code, message}` bodies (shared `errorHandler`).
 */
export function jobRoutes(db: Database, options: { retryWindowMs?: number } = {}): Hono {
  const retryWindowMs = options.retryWindowMs ?? null;
  const app = new Hono();
  app.onError(errorHandler());
  app.get('/api/v1/jobs/:id', async (c) => {
    const job = await getJob(db, c.req.param('id'), retryWindowMs);
    if (!job) {
      throw new PolyvisionError('job_not_found', `no job ${c.req.param('id')}`, { httpStatus: 404 });
    }
    return c.json(job);
  });
  app.get('/api/v1/jobs', async (c) => {
    const q = c.req.query();
    const limit = q.limit === undefined ? undefined : Number(q.limit);
    return c.json(
      await listJobs(
        db,
        {
          ...(q.status ? { status: q.status as JobStatus } : {}),
          ...(q.organization_id ? { organization_id: q.organization_id } : {}),
          ...(q.match_id ? { match_id: q.match_id } : {}),
          ...(limit === undefined ? {} : { limit }),
          ...(q.cursor ? { cursor: q.cursor } : {}),
        },
        retryWindowMs,
      ),
    );
  });
  return app;
}
