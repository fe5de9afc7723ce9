/**
 * The vcam stage: a virtual camera over the panorama. `planCameraPath`
 * (players' centre pulled toward the ball, zoom from their spread, look-ahead,
 * dead zone, speed/acceleration caps), `measureCameraPath` (ball-in-crop
 * share, jerk), `renderVirtualCamera` (exact per-frame crop, 1920×1080 H.264).
 */
export * from './camera-path.ts';
export * from './crop-resize.ts';
export * from './path-quality.ts';
export * from './render-vcam.ts';
