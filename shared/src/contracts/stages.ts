import { z } from 'zod';

/**
 * Analysis stages in pipeline order (DESIGN.md; seed orchestration-decision.md):
 * stitch → detect → track → vcam and analyze (in parallel) → encode.
 */
export const STAGES = Object.freeze(['stitch', 'detect', 'track', 'vcam', 'analyze', 'encode'] as const);
export const stageSchema = z.enum(STAGES);
export type Stage = z.infer<typeof stageSchema>;
