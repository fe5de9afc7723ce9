/**
 * @polyvision/shared — what every Polyvision service stands on: errors,
 * configuration, logging, metrics, HTTP helpers, contracts and leadership.
 */

export * from './config/index.ts';
export * from './contracts/index.ts';
export * from './errors/index.ts';
export * from './http/index.ts';
export * from './leadership/index.ts';
export * from './logging/index.ts';
export * from './media/index.ts';
export * from './metrics/index.ts';
export * from './process/index.ts';
export * from './retry/index.ts';
export * from './synthetic/index.ts';
export * from './venue/index.ts';
export * from './vision/index.ts';
