/**
 * Backends behind one {@link BlobBackend} interface: `local` (a folder) and
 * `s3` (a bucket). Both receive whole, checked, fsynced files from the
 * upload staging area.
 */
export * from './blob-backend.ts';
export * from './local/index.ts';
export * from './s3/index.ts';
