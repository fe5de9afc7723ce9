/**
 * @polyvision/storage-element — the storage element service: capacity
 * report, reservations that never oversubscribe, resumable offset-based
 * uploads published atomically, Range reads, local and S3 backends.
 *
 * Start one in-process with {@link startStorageElement} (embedded demo,
 * tests) or as a process with `node storage-element/src/main.ts`.
 */
export * from './config.ts';
export * from './errors.ts';
export * from './run-process.ts';
export * from './storage-element.ts';
