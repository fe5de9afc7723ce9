/**
 * The one error base class of Polyvision.
 *
 * Every error a service raises on purpose carries a stable machine-readable
 * `code` (snake_case, part of the public API: HTTP bodies, stage failures,
 * logs), a `retriable` flag that the retry helper and the orchestrator read,
 * and an optional `cause` (ES2022 error cause).
 */
export interface PolyvisionErrorOptions {
  /** Whether repeating the same operation later may succeed. @defaultValue false */
  retriable?: boolean;
  /** The underlying error, kept for logs. */
  cause?: unknown;
  /** HTTP status to answer with when this error reaches a handler. @defaultValue 500 */
  httpStatus?: number;
  /** Extra JSON-safe fields merged into the HTTP error body (e.g. `available`). */
  details?: Record<string, unknown>;
}

export class PolyvisionError extends Error {
  readonly code: string;
  readonly retriable: boolean;
  readonly httpStatus: number;
  readonly details: Record<string, unknown>;

  constructor(code: string, message: string, options: PolyvisionErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'PolyvisionError';
    this.code = code;
    this.retriable = options.retriable ?? false;
    this.httpStatus = options.httpStatus ?? 500;
    this.details = options.details ?? {};
  }

  /** The JSON body an HTTP handler answers with: `{code, message, ...details}`. */
  toJSON(): Record<string, unknown> {
    return { code: this.code, message: this.message, ...this.details };
  }
}

/** Bad input from a caller (HTTP 400 unless given). Never retriable. */
export class ValidationError extends PolyvisionError {
  constructor(code: string, message: string, options: Omit<PolyvisionErrorOptions, 'retriable'> = {}) {
    super(code, message, { httpStatus: 400, ...options, retriable: false });
    this.name = 'ValidationError';
  }
}

/** A configuration value that is missing or wrong; names the variable. */
export class ConfigError extends PolyvisionError {
  readonly variable: string;
  constructor(variable: string, message: string) {
    super('config_invalid', `${variable}: ${message}`, { retriable: false });
    this.name = 'ConfigError';
    this.variable = variable;
  }
}

/**
 * Turns anything thrown into a PolyvisionError, keeping the original as
 * `cause`. Errors that already are PolyvisionErrors pass through unchanged.
 */
export function coerceError(error: unknown, code = 'internal_error'): PolyvisionError {
  if (error instanceof PolyvisionError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new PolyvisionError(code, message, { cause: error });
}

/** Whether an error may succeed when retried: PolyvisionError's flag, else false. */
export function isRetriable(error: unknown): boolean {
  return error instanceof PolyvisionError && error.retriable;
}
