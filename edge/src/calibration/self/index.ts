/**
 * Self-calibration of a camera rig from its footage: background frames,
 * plumb-line lens estimate, ORB feature matching (OpenCV.js), robust
 * homography, the half-way panorama plane, time offset and colour gains.
 */
export * from './background-frame.ts';
export * from './features.ts';
export * from './lens-distortion.ts';
export * from './line-straightness.ts';
export * from './panorama-crop.ts';
export * from './panorama-frame.ts';
export * from './panorama-layout.ts';
export * from './panorama-plane.ts';
export * from './pitch-lines.ts';
export * from './pitch-plane.ts';
export * from './seam-alignment.ts';
export * from './self-calibrate.ts';
export * from './time-offset.ts';
export * from './video-samples.ts';
