import { z } from 'zod';
import { ConfigError } from '../errors/index.ts';

/**
 * Parses environment variables with a zod object schema whose keys are the
 * variable names. Values arrive as strings; use the helpers below (`envInt`,
 * `envSeconds`, …) so units are converted once, at the edge of the config.
 *
 * @param schema - zod object schema; keys are variable names.
 * @param env - the environment to read. @defaultValue process.env
 * @returns the parsed, fully defaulted config.
 * @throws ConfigError naming the first bad variable, its value and what was expected.
 */
export function loadConfig<S extends z.ZodObject>(
  schema: S,
  env: Record<string, string | undefined> = process.env,
): z.output<S> {
  const picked: Record<string, string | undefined> = {};
  for (const key of Object.keys(schema.shape)) {
    const value = env[key];
    picked[key] = value === '' ? undefined : value;
  }
  const result = schema.safeParse(picked);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const variable = String(issue?.path[0] ?? '(unknown)');
  const value = picked[variable];
  // zod's own text for a missing value ("expected string, received undefined") tells an operator nothing.
  const expected =
    value === undefined && issue?.code === 'invalid_type'
      ? 'a value: it is required'
      : (issue?.message ?? 'a valid value');
  throw new ConfigError(variable, `got ${describeConfigValue(variable, value)}, expected ${expected}`);
}

/** Variable names whose whole value is a secret: never printed, only its length. */
const SECRET_VARIABLE = /TOKEN|PASSWORD|SECRET|CREDENTIAL|PRIVATE|(^|_)KEY$|ACCESS_KEY/;

/**
 * How a configuration value may appear in an error message: `nothing` when
 * unset; `<N characters, not shown>` for a secret variable (name contains
 * TOKEN, PASSWORD, SECRET, …); otherwise JSON with any URL user-info
 * (`user:password@`) replaced by `***@` — also in a malformed URL, which a
 * URL parser would refuse to take apart.
 */
export function describeConfigValue(variable: string, value: string | undefined): string {
  if (value === undefined) return 'nothing';
  if (SECRET_VARIABLE.test(variable)) return `<${value.length} characters, not shown>`;
  return JSON.stringify(redactUserinfo(value));
}

/**
 * Replaces the user-info of anything URL-like (`scheme://user:pass@host`,
 * `user:pass@host`) by `***`: everything from after `://` (or the start) to
 * the LAST `@` of the string — a malformed password may hold `/`, `#`, `?`
 * or `@`, so the path is not trusted to end the user-info. Strings without
 * `@` are returned unchanged.
 */
export function redactUserinfo(value: string): string {
  const schemeEnd = value.indexOf('://');
  const start = schemeEnd >= 0 ? schemeEnd + 3 : 0;
  const at = value.lastIndexOf('@');
  if (at < start) return value;
  return `${value.slice(0, start)}***${value.slice(at)}`;
}

/** An integer variable within [min, max]. */
export function envInt(defaultValue: number | undefined, min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER) {
  const base = z
    .string()
    .regex(/^-?\d+$/, { message: `an integer between ${min} and ${max}` })
    .transform(Number)
    .pipe(
      z
        .number()
        .int()
        .min(min, { message: `an integer ≥ ${min}` })
        .max(max, { message: `an integer ≤ ${max}` }),
    );
  return defaultValue === undefined ? base : base.optional().transform((v) => v ?? defaultValue);
}

/** A duration given in seconds (seed names such as CAPACITY_MONITOR_LEADER_TTL), returned in milliseconds. */
export function envSecondsAsMs(defaultSeconds: number, minSeconds = 0) {
  return z
    .string()
    .regex(/^\d+(\.\d+)?$/, { message: `a number of seconds ≥ ${minSeconds}` })
    .transform(Number)
    .pipe(z.number().min(minSeconds, { message: `a number of seconds ≥ ${minSeconds}` }))
    .optional()
    .transform((v) => Math.round((v ?? defaultSeconds) * 1000));
}

/** A boolean written as on/off, true/false, 1/0 or yes/no. */
export function envBool(defaultValue: boolean) {
  return z
    .enum(['on', 'off', 'true', 'false', '1', '0', 'yes', 'no'], { message: 'on or off' })
    .optional()
    .transform((v) => (v === undefined ? defaultValue : ['on', 'true', '1', 'yes'].includes(v)));
}

/** One of a fixed set of strings. */
export function envEnum<const T extends readonly [string, ...string[]]>(values: T, defaultValue?: T[number]) {
  const base = z.enum(values, { message: `one of ${values.join(', ')}` });
  return defaultValue === undefined ? base : base.optional().transform((v) => v ?? defaultValue);
}

/** A URL (http, https, redis, postgres, …). */
export function envUrl() {
  return z.string().url({ message: 'a URL' });
}

/**
 * Runs `load` and, on a ConfigError, prints one line to stderr and exits
 * with status 2 (no stack dump). Other errors propagate.
 */
export function loadConfigOrExit<T>(load: () => T): T {
  try {
    return load();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`configuration error: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
}
