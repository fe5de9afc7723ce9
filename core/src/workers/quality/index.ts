/**
 * Quality metrics for the analysis stages, faithful to TrackEval
 * (github.com/JonathonLuiten/TrackEval): HOTA (with DetA, AssA, LocA), CLEAR
 * (MOTA, MOTP, IDSW, MT/PT/ML, Frag), Identity (IDF1, IDP, IDR); detection
 * precision/recall at IoU 0.5; MOTChallenge text parsing. No Node
 * implementation of TrackEval exists, so this is a port, tested against
 * hand-computed cases.
 */

export * from './average-precision.ts';
export * from './clear.ts';
export * from './detection-quality.ts';
export * from './evaluate.ts';
export * from './evaluate-detections.ts';
export * from './ground-truth.ts';
export * from './hota.ts';
export * from './identity.ts';
export * from './sequence.ts';
