/**
 * Ingest: the edge-facing upload API (DESIGN.md "Ingest"; seed
 * capacity-management-migration-plan.md, Phase 1 "UploadService Integration").
 *
 * - {@link startIngest} — one replica: tus 1.0.0 at `/api/v1/uploads`
 *   (creation, creation-with-upload, checksum, termination, expiration) on
 *   @tus/server with {@link StorageElementDataStore} (bytes streamed to the
 *   chosen SE) and {@link RedisLocker}; edge bearer tokens; `/health/*`, `/metrics`.
 * - {@link placeFile} — reserve on an SE before any byte moves; 507 →
 *   exclude, lazy update, next; final 507 with `Retry-After`.
 * - {@link recordCompletedUpload} — catalog row + `job.submit` (outbox) in one transaction.
 * - {@link createEdgeToken}, {@link verifyEdgeToken}, {@link listEdgeTokens},
 *   {@link revokeEdgeToken} — per-edge tokens stored hashed, scoped to an organization.
 * - {@link StorageElementClient} — reservations and resumable writes on an SE over HTTP.
 * - {@link loadIngestSettings} — the environment.
 */
export * from './catalog.ts';
export * from './edge-tokens.ts';
export * from './ingest-app.ts';
export * from './ingest-service.ts';
export * from './options.ts';
export * from './placement.ts';
export * from './quota.ts';
export * from './redis-locker.ts';
export * from './se-client.ts';
export * from './se-data-store.ts';
export * from './tus-routes.ts';
export * from './upload-rows.ts';
