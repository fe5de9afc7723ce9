/**
 * The track stage: ByteTrack multi-object tracking of the people (two-stage association of
 * high- then low-score boxes, thresholds from the detector's model card or calibrated on the clip,
 * constant-velocity Kalman filter, Hungarian assignment from the `munkres` package), short gaps
 * interpolated, tracks off the pitch dropped; the ball's own track (`ball/`); detections file →
 * tracks file (`tracks-format.ts`) + `ball-track.json` (`ball/ball-track-format.ts`).
 */
export * from './appearance-features.ts';
export * from './assignment.ts';
export * from './ball/index.ts';
export * from './byte-tracker.ts';
export * from './draw-tracks.ts';
export * from './kalman-filter.ts';
export * from './merge-segment-tracks.ts';
export * from './model-card.ts';
export * from './pitch-region.ts';
export * from './run-track.ts';
export * from './score-thresholds.ts';
export * from './tracker-carry.ts';
export * from './tracks-format.ts';
