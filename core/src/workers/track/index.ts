/**
 * The track stage: ByteTrack multi-object tracking (two-stage association of
 * high- then low-score boxes, constant-velocity Kalman filter, Hungarian
 * assignment from the `munkres` package), per class, with short gaps
 * interpolated; detections file → tracks file (`tracks-format.ts`).
 */
export * from './assignment.ts';
export * from './byte-tracker.ts';
export * from './draw-tracks.ts';
export * from './kalman-filter.ts';
export * from './run-track.ts';
export * from './tracks-format.ts';
