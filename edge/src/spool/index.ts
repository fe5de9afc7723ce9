/**
 * The durable store-and-forward spool: `Spool` (segments on disk, journaled
 * in node:sqlite, deleted only after the core confirmed their sha256,
 * retention and disk guard), the `Journal` itself, and the fsync/sha256 helpers.
 */
export * from './durable-files.ts';
export * from './journal.ts';
export * from './spool.ts';
