import { z } from 'zod';

/**
 * Every error answer of every Polyvision HTTP API: `{code, message}` plus
 * optional extra fields (see PolyvisionError.toJSON and http/error-handler.ts).
 */
export const errorBodySchema = z.looseObject({
  /** Stable snake_case machine code. */
  code: z.string().min(1),
  /** Human-readable explanation. */
  message: z.string(),
});

export type ErrorBody = z.infer<typeof errorBodySchema>;
