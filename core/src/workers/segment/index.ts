/**
 * Segments of a match job (issue #18): the match clock of a segment's frames, object keys that
 * keep segments apart, and the carry artifact through which a sequential stage (track, vcam,
 * analyze, encode) hands its state from segment k to k+1.
 */
export * from './carry.ts';
export * from './segment-clock.ts';
export * from './segment-output-key.ts';
