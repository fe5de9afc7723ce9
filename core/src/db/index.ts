/**
 * Core's PostgreSQL: the `Database` port with pg and PGlite drivers running
 * the same SQL, and the numbered migrations (0001–0099 orchestrator: file
 * catalog, uploads, jobs, job stages, outbox, processed messages, partition
 * owners, stage claims; 0100–0199 ingest).
 */
export * from './create-database.ts';
export * from './database.ts';
export * from './drivers/pg-database.ts';
export * from './drivers/pglite-database.ts';
export * from './migrate.ts';
