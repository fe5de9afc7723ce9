/**
 * Uploading the spool to the core's ingest: `Uploader` (the loop: panoramas
 * first, resume from stored tus URLs, 507 → wait `Retry-After`, alarms,
 * confirmation by sha256), `tusUpload` (one tus-js-client attempt),
 * `ingestError` (HTTP answers → error codes), `BandwidthLimiter`,
 * `parseRetryAfterMs`, and the CLI progress bar.
 */
export * from './bandwidth-limiter.ts';
export * from './ingest-errors.ts';
export * from './progress-bar.ts';
export * from './retry-after.ts';
export * from './tus-upload.ts';
export * from './uploader.ts';
