/**
 * Calibration from point correspondences: normalised DLT (`homographyDlt`)
 * and RANSAC on top of it (`homographyRansac`), and `calibrateVenue`, which
 * fills a venue's `image_to_panorama` homographies from manual or detected
 * point pairs.
 */
export * from './calibrate-venue.ts';
export * from './dlt.ts';
export * from './ransac.ts';
export * from './self/index.ts';
