/** Recording a match: `MatchRecorder` (cameras → slots → stitched panorama → spool). */
export * from './match-recorder.ts';
