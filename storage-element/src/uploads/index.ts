/**
 * Resumable uploads by offset: create (bound to a reservation), append a
 * stream at the committed offset, ask for the offset, complete (size and
 * sha256 checked, fsync, atomic publish through the backend), abort.
 * Survives restarts, including `kill -9`.
 */
export * from './hash-file.ts';
export * from './upload-record.ts';
export * from './upload-store.ts';
