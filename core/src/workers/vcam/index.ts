/**
 * The vcam stage: a virtual camera over the panorama. `planCameraPath`
 * (on-pitch players' centre or the ball, zoom from their spread, look-ahead,
 * dead zone, speed/acceleration caps), `chooseVcamSizing` (output size and
 * narrowest crop from the largest upscale), `measureCameraPath` (ball-in-crop,
 * crop on pitch, jerk), `renderVirtualCamera` (ffmpeg crop driven by a
 * `sendcmd` script), `renderTracksOverlay` (tracks and crop window drawn with libass).
 */
export * from './ball-positions.ts';
export * from './camera-path.ts';
export * from './crop-commands.ts';
export * from './grass-region.ts';
export * from './output-size.ts';
export * from './overlay-ass.ts';
export * from './path-carry.ts';
export * from './path-quality.ts';
export * from './pitch-region.ts';
export * from './render-overlay.ts';
export * from './render-vcam.ts';
