/** Geometry of a venue calibration that every reader of `venue.json` needs: the panorama projection and the pitch mapping. */
export * from './panorama-projection.ts';
export * from './pitch-mapping.ts';
