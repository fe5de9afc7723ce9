/** Recording a match: `MatchRecorder` (cameras → slots → stitched panorama → spool), its start marker. */
export * from './match-recorder.ts';
export * from './start-marker.ts';
