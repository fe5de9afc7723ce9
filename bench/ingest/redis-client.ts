/**
 * ioredis for the ingest benchmarks, resolved from the core package (the
 * repository root has no ioredis of its own), the same copy the capacity
 * cache uses.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

type IoRedis = typeof import('../../core/node_modules/ioredis/built/index.js');

const requireFromCore = createRequire(new URL('../../core/package.json', import.meta.url));
const ioredis = (await import(pathToFileURL(requireFromCore.resolve('ioredis')).href)) as IoRedis;

export const Redis = ioredis.Redis;
export type Redis = InstanceType<IoRedis['Redis']>;
