/**
 * @polyvision/edge — the stadium edge node: capture (one ffmpeg per camera,
 * wall-clock aligned segments), on-site stitching (remap maps computed once
 * from the venue calibration; DLT + RANSAC calibration from points), a
 * durable spool (node:sqlite journal), resumable tus uploads with 507
 * backoff, the match schedule (node-cron), and a local status API.
 * Start it with `pnpm polyvision edge --config edge.json` (deploy/src/cli/commands/edge.ts).
 */
export * from './alarms/index.ts';
export * from './calibration/index.ts';
export * from './capture/index.ts';
export * from './config/index.ts';
export * from './node/index.ts';
export * from './recording/index.ts';
export * from './schedule/index.ts';
export * from './spool/index.ts';
export * from './status/index.ts';
export * from './stitch/index.ts';
export * from './upload/index.ts';
