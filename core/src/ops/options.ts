import { ConfigError, envInt, loadConfig } from '@polyvision/shared';
import { z } from 'zod';

/** Settings of the ops capacity map (`OPS_*` variables; core/README.md, "Ops capacity map"). */
export interface OpsSettings {
  /** `OPS_TOKENS`: operator tokens (read-only role), comma-separated; distinct from edge tokens. */
  tokens: readonly string[];
  /** `OPS_SESSION_TTL_SECONDS`: lifetime of the browser session cookie set by the login form. @defaultValue 43_200_000 (12 h) */
  sessionTtlMs: number;
  /** `OPS_REFRESH_MS`: how often each ingest replica reads the fleet state and pushes changes to its SSE clients. @defaultValue 1_000 */
  refreshIntervalMs: number;
  /** `OPS_WARNING_PERCENT`: writable capacity used (percent) at or above which a datacenter or the fleet is flagged. @defaultValue 85 */
  warningPercent: number;
  /** `OPS_EVENTS_MAX`: recent events kept in Redis (`ops:events` stream). @defaultValue 500 */
  eventsMax: number;
  /** `OPS_LATEST_JOBS`: jobs listed in the jobs panel. @defaultValue 10 */
  latestJobs: number;
}

/** Defaults of {@link OpsSettings} (tokens excepted). */
export const OPS_DEFAULTS: Readonly<Omit<OpsSettings, 'tokens'>> = Object.freeze({
  sessionTtlMs: 12 * 3_600_000,
  refreshIntervalMs: 1_000,
  warningPercent: 85,
  eventsMax: 500,
  latestJobs: 10,
});

const tokenPattern = /^[\x21-\x7e]{16,512}$/;

/** Environment schema (keys are the variable names). */
export const opsEnvSchema = z.object({
  OPS_TOKENS: z.string().default(''),
  OPS_SESSION_TTL_SECONDS: envInt(OPS_DEFAULTS.sessionTtlMs / 1000, 60, 30 * 86_400),
  OPS_REFRESH_MS: envInt(OPS_DEFAULTS.refreshIntervalMs, 100, 60_000),
  OPS_WARNING_PERCENT: envInt(OPS_DEFAULTS.warningPercent, 1, 100),
  OPS_EVENTS_MAX: envInt(OPS_DEFAULTS.eventsMax, 10, 100_000),
  OPS_LATEST_JOBS: envInt(OPS_DEFAULTS.latestJobs, 1, 100),
});

/**
 * Reads the `OPS_*` variables.
 *
 * @returns the settings, or `null` when `OPS_TOKENS` is empty (the map is
 *   then not served: no operator could open it).
 * @throws ConfigError naming the variable: a bad number, or a token shorter
 *   than 16 or longer than 512 printable ASCII characters.
 */
export function loadOpsSettings(env: Record<string, string | undefined> = process.env): OpsSettings | null {
  const e = loadConfig(opsEnvSchema, env);
  const tokens = e.OPS_TOKENS.split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  if (tokens.length === 0) return null;
  for (const [i, token] of tokens.entries()) {
    if (!tokenPattern.test(token)) {
      throw new ConfigError(
        'OPS_TOKENS',
        `token #${i + 1} has ${token.length} characters; expected 16 to 512 printable ASCII characters without spaces or commas`,
      );
    }
  }
  return compileOpsSettings({
    tokens,
    sessionTtlMs: e.OPS_SESSION_TTL_SECONDS * 1000,
    refreshIntervalMs: e.OPS_REFRESH_MS,
    warningPercent: e.OPS_WARNING_PERCENT,
    eventsMax: e.OPS_EVENTS_MAX,
    latestJobs: e.OPS_LATEST_JOBS,
  });
}

/**
 * Fills defaults (in-process use and tests).
 * @throws ConfigError `OPS_TOKENS` when no token is given.
 */
export function compileOpsSettings(partial: Partial<OpsSettings> & { tokens: readonly string[] }): OpsSettings {
  if (partial.tokens.length === 0 || partial.tokens.some((t) => t.length === 0)) {
    throw new ConfigError('OPS_TOKENS', 'expected at least one non-empty operator token');
  }
  return Object.freeze({ ...OPS_DEFAULTS, ...partial, tokens: Object.freeze([...partial.tokens]) });
}
