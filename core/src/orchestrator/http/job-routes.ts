import { errorHandler, type JobStatus, PolyvisionError, rejectControlCharacters } from '@polyvision/shared';
import { Hono } from 'hono';
import { EdgeTokenVerifier } from '../../auth/edge-token-verifier.ts';
import { type PrincipalVariables, principalAuth } from '../../auth/principal.ts';
import type { Database } from '../../db/database.ts';
import { getJob, listJobs } from '../state/job-queries.ts';

/** Options of {@link jobRoutes}. */
export interface JobRoutesOptions {
  /** Operator tokens (`OPS_TOKENS`): they read every organization's jobs. @defaultValue none */
  operatorTokens?: readonly string[];
  /** Edge tokens, checked in `edge_tokens` of `db`: each reads its own organization's jobs. @defaultValue a verifier on `db` */
  edgeTokens?: EdgeTokenVerifier;
  /** Retry window of retriable input errors (ms), to say what a waiting stage waits for. @defaultValue none */
  retryWindowMs?: number;
}

/** Longest id or filter value the API looks up, in characters. */
const MAX_ID_LENGTH = 200;

function checkId(name: string, value: string | undefined): void {
  if (value !== undefined && value.length > MAX_ID_LENGTH) {
    throw new PolyvisionError('invalid_filter', `${name} is longer than ${MAX_ID_LENGTH} characters`, {
      httpStatus: 400,
    });
  }
}

/**
 * Read API of jobs (hono), mounted by whoever composes the service. Every
 * route needs `Authorization: Bearer <token>`: an operator token sees every
 * job; an edge token sees its own organization's jobs only (another's job
 * is `404`, another's `organization_id` filter `403`). No token: 401.
 * - `GET /api/v1/jobs/:id` → the job with its stages (status, `phase`:
 *   queued / waiting / running, attempts, progress, outputs, errors,
 *   `waiting_for`, timestamps); 404 `{code: 'job_not_found'}`.
 * - `GET /api/v1/jobs?status=&organization_id=&match_id=&limit=&cursor=` →
 *   `{jobs, next_cursor}`, newest first; 400 `{code: 'invalid_filter'}`;
 *   a control character (NUL, CR, LF) in the path or a filter: 400 `{code: 'invalid_characters'}`.
 * Errors are `{code, message}` bodies (shared `errorHandler`).
 */
export function jobRoutes(db: Database, options: JobRoutesOptions = {}): Hono<{ Variables: PrincipalVariables }> {
  const app = new Hono<{ Variables: PrincipalVariables }>();
  const retryWindowMs = options.retryWindowMs ?? null;
  app.onError(errorHandler());
  const auth = principalAuth({
    operatorTokens: options.operatorTokens ?? [],
    edgeTokens: options.edgeTokens ?? new EdgeTokenVerifier({ db }),
    realm: 'polyvision-jobs',
  });
  for (const path of ['/api/v1/jobs', '/api/v1/jobs/*']) {
    app.use(path, rejectControlCharacters());
    app.use(path, auth);
  }
  app.get('/api/v1/jobs/:id', async (c) => {
    const id = c.req.param('id');
    checkId('job id', id);
    const job = await getJob(db, id, retryWindowMs);
    const principal = c.get('principal');
    if (!job || (principal.kind === 'edge' && job.organization_id !== principal.organization_id)) {
      throw new PolyvisionError('job_not_found', 'no such job', { httpStatus: 404 });
    }
    return c.json(job);
  });
  app.get('/api/v1/jobs', async (c) => {
    const q = c.req.query();
    for (const name of ['status', 'organization_id', 'match_id', 'cursor', 'limit'] as const) checkId(name, q[name]);
    const principal = c.get('principal');
    let organizationId = q.organization_id;
    if (principal.kind === 'edge') {
      if (organizationId && organizationId !== principal.organization_id) {
        throw new PolyvisionError(
          'organization_forbidden',
          `this token belongs to organization "${principal.organization_id}"`,
          { httpStatus: 403 },
        );
      }
      organizationId = principal.organization_id;
    }
    const limit = q.limit === undefined ? undefined : Number(q.limit);
    return c.json(
      await listJobs(
        db,
        {
          ...(q.status ? { status: q.status as JobStatus } : {}),
          ...(organizationId ? { organization_id: organizationId } : {}),
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
