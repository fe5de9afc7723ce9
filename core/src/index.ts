/**
 * @polyvision/core — the core site: message bus, PostgreSQL, the
 * partitioned orchestrator, the worker runtime (and, from other folders,
 * ingest, capacity, the analysis stages, ops).
 */
export * from './bus/index.ts';
export * from './capacity/index.ts';
export * from './db/index.ts';
export * from './ingest/index.ts';
export * from './orchestrator/index.ts';
export * from './workers/artifacts/index.ts';
export { DEFAULT_ANALYSIS_FPS } from './workers/detect/detect-options.ts';
export { readDetectionsFile } from './workers/detect/detections-format.ts';
export * from './workers/detect/stage-io.ts';
export * from './workers/quality/index.ts';
export * from './workers/runtime/index.ts';
export * from './workers/runtime/testing/counting-stage.ts';
export { readBallTrackFile, writeBallTrackFile } from './workers/track/ball/ball-track-format.ts';
export { mergeSegmentBallTracks } from './workers/track/ball/merge-segment-ball-tracks.ts';
export { mergeSegmentTracks } from './workers/track/merge-segment-tracks.ts';
export { readTracksFile, type TracksFile } from './workers/track/tracks-format.ts';
