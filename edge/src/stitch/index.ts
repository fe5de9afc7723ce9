/**
 * On-site stitching: remap maps and feather masks computed once from the
 * venue calibration (`computeRemapMaps`, `writeMapFiles`), the per-segment
 * ffmpeg graph (`stitchArgs`: remap + feathered alpha overlay + H.264, NVENC where it
 * works), the `Stitcher` that ties them together, and the quality measures
 * (`seamMisalignment`, `panoramaPsnr`), and the live seam check (`SeamCheck`:
 * the `seam_misaligned` alarm when a camera has moved since the calibration),
 * and a still with the pitch markings drawn (`writePitchPreview`).
 */
export * from './filter-graph.ts';
export * from './homography.ts';
export * from './map-files.ts';
export * from './pitch-preview.ts';
export * from './quality.ts';
export * from './remap-maps.ts';
export * from './seam-check.ts';
export * from './stitcher.ts';
