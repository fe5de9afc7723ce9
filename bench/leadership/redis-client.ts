/**
 * ioredis for the benchmark scripts. The repository root has no ioredis of
 * its own (it is a dependency of @polyvision/shared), so it is resolved from
 * the shared package, the same copy the TtlStore driver uses.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

type IoRedis = typeof import('../../shared/node_modules/ioredis/built/index.js');

const requireFromShared = createRequire(new URL('../../shared/package.json', import.meta.url));
const ioredis = (await import(pathToFileURL(requireFromShared.resolve('ioredis')).href)) as IoRedis;

export const Redis = ioredis.Redis;
export type Redis = InstanceType<IoRedis['Redis']>;
