/**
 * The ball track: candidates filtered (score, pitch, static marks), constant-velocity Kalman
 * tracklets, the best non-overlapping chain of them as the one ball, short gaps interpolated;
 * written as `ball-track.json` by the track stage; a match's segment goes on from the previous one's
 * last frames (`ball-carry.ts`); a match's segments join into one file (`merge-segment-ball-tracks.ts`).
 */
export * from './ball-candidates.ts';
export * from './ball-carry.ts';
export * from './ball-kalman.ts';
export * from './ball-track-format.ts';
export * from './ball-tracker.ts';
export * from './merge-segment-ball-tracks.ts';
export * from './track-ball-detections.ts';
