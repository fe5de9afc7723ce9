/**
 * Calibration from point correspondences: normalised DLT (`homographyDlt`)
 * and RANSAC on top of it (`homographyRansac`), and `calibrateVenue`, which
 * fills a venue's `image_to_panorama` homographies from manual or detected
 * point pairs; `registerPitch`, which measures the pitch frame (metres) of a
 * venue from pitch points seen by its cameras.
 */
export * from './calibrate-venue.ts';
export * from './dlt.ts';
export * from './ransac.ts';
export * from './register-pitch.ts';
export * from './self/index.ts';
