import { type Context, Hono } from 'hono';

/** A health check: resolves (or returns true) when healthy; throws or returns false otherwise. */
export type HealthCheck = () => unknown | Promise<unknown>;

/** Options of {@link healthRoutes}. */
export interface HealthRoutesOptions {
  /** Checks for `/health/live` (is the process working at all). @defaultValue none: always 200 */
  live?: Record<string, HealthCheck>;
  /** Checks for `/health/ready` (can it serve traffic: Redis, database, …). @defaultValue none */
  ready?: Record<string, HealthCheck>;
  /** Time one check may take before it counts as failed, in ms. @defaultValue 2_000 */
  checkTimeoutMs?: number;
  /**
   * Whether this request may see the checks (names, errors, timings). When it
   * may not, `/health/ready` answers the same status code with `{status}`
   * only — enough for a probe, nothing about the deployment.
   * @defaultValue every request sees them
   */
  showDetails?: (c: Context) => boolean | Promise<boolean>;
}

/** One check's outcome in the health body. */
export interface HealthCheckResult {
  ok: boolean;
  /** Why it failed. */
  error?: string;
  durationMs: number;
}

async function runCheck(check: HealthCheck, timeoutMs: number): Promise<HealthCheckResult> {
  const startedAt = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    const outcome = await Promise.race([
      Promise.resolve().then(check),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    const durationMs = Math.round(performance.now() - startedAt);
    return outcome === false ? { ok: false, error: 'check returned false', durationMs } : { ok: true, durationMs };
  } catch (error) {
    const durationMs = Math.round(performance.now() - startedAt);
    return { ok: false, error: error instanceof Error ? error.message : String(error), durationMs };
  } finally {
    clearTimeout(timer);
  }
}

/** Runs checks concurrently; returns `{status: 'ok'|'fail', checks}`. */
export async function runHealthChecks(
  checks: Record<string, HealthCheck>,
  checkTimeoutMs = 2_000,
): Promise<{ status: 'ok' | 'fail'; checks: Record<string, HealthCheckResult> }> {
  const entries = await Promise.all(
    Object.entries(checks).map(async ([name, check]) => [name, await runCheck(check, checkTimeoutMs)] as const),
  );
  const results = Object.fromEntries(entries);
  return { status: entries.every(([, r]) => r.ok) ? 'ok' : 'fail', checks: results };
}

/**
 * A hono app with `GET /health/live` and `GET /health/ready` (Kubernetes
 * probe conventions). Each answers 200 `{status: 'ok', checks}` when all its
 * checks pass, else 503 `{status: 'fail', checks: {name: {ok, error, durationMs}}}`.
 * Checks run concurrently, each bounded by `checkTimeoutMs`. With
 * `showDetails`, a request it refuses gets `{status}` only on `/health/ready`.
 *
 * Mount with `app.route('/', healthRoutes({ ready: { redis: () => redis.ping() } }))`.
 */
export function healthRoutes(options: HealthRoutesOptions = {}): Hono {
  const app = new Hono();
  const timeoutMs = options.checkTimeoutMs ?? 2_000;
  for (const [kind, checks] of [
    ['live', options.live ?? {}],
    ['ready', options.ready ?? {}],
  ] as const) {
    app.get(`/health/${kind}`, async (c) => {
      const body = await runHealthChecks(checks, timeoutMs);
      const code = body.status === 'ok' ? 200 : 503;
      if (kind === 'ready' && options.showDetails && !(await options.showDetails(c))) {
        return c.json({ status: body.status }, code);
      }
      return c.json(body, code);
    });
  }
  return app;
}
