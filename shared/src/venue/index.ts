/** Geometry of a venue calibration that every reader of `venue.json` needs: the pitch mapping. */
export * from './pitch-mapping.ts';
