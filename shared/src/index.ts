/**
 * @polyvision/shared — what every Polyvision service stands on: errors,
 * configuration, logging, metrics, HTTP helpers, contracts and leadership.
 */

export * from './config/index.ts';
export * from './errors/index.ts';
export * from './logging/index.ts';
