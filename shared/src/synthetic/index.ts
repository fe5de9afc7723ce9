/**
 * Synthetic multi-camera football footage with ground truth, for tests, the
 * demo and detector training:
 * - `generateMatch` (generate.ts): the whole clip — camera MP4s, ground truth
 *   (MOTChallenge boxes, pitch positions), venue.json, manifest.json last;
 * - `compileSynthOptions` (options.ts): validated options;
 * - the pieces: `MatchSimulation` (simulation.ts), `buildRig` (rig.ts), the
 *   pinhole model (camera.ts), 3×3 matrices (mat3.ts), pitch markings
 *   (pitch.ts), rendering (background.ts, figures.ts, draw-figures.ts,
 *   raster.ts), ground-truth rows (ground-truth.ts), the venue calibration
 *   (venue.ts).
 */
export * from './appearance.ts';
export * from './camera.ts';
export * from './figures.ts';
export * from './generate.ts';
export * from './ground-truth.ts';
export * from './mat3.ts';
export * from './options.ts';
export * from './pitch.ts';
export * from './prng.ts';
export * from './rig.ts';
export * from './simulation.ts';
export * from './venue.ts';
