/**
 * The analyze stage: panorama pixels → pitch metres through the venue
 * calibration (or image pixels without one), per-track distance, speed and
 * sprints, team assignment by jersey-colour clustering (ml-kmeans), roles (from
 * the team, the class and where a person stood), heatmaps (pngjs) and `summary.json`.
 */
export * from './analytics-warnings.ts';
export * from './heatmap.ts';
export * from './kinematics.ts';
export * from './match-analytics.ts';
export * from './pitch-space.ts';
export * from './roles.ts';
export * from './run-analyze.ts';
export * from './team-colours.ts';
