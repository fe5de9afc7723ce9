/**
 * Retrying with capped exponential backoff and full jitter, only for
 * retriable errors, abortable at any moment.
 */
export * from './backoff.ts';
export * from './retry.ts';
export * from './sleep.ts';
