/**
 * Where stages read inputs and write outputs.
 * - {@link ArtifactIo}: the seam (a local path for an input ref; an output file → its ref).
 * - {@link LocalArtifactIo}: a local folder (embedded runs, tests).
 * - {@link StorageElementArtifactIo}: storage elements over HTTP — streamed,
 *   resumable, SHA-256-checked downloads; outputs placed like ingest's files
 *   (capacity cache, reservation, 507 → next SE), written with the SE's
 *   resumable protocol and recorded idempotently in the `files` catalog.
 * - {@link createArtifactIo}: picks one from the environment (`STORAGE_ELEMENTS`).
 */
export * from './artifact-io.ts';
export * from './capacity-view.ts';
export * from './create-artifact-io.ts';
export * from './download.ts';
export * from './output-catalog.ts';
export * from './output-file-id.ts';
export * from './se-artifact-io.ts';
export * from './upload.ts';
