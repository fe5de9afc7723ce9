import { STAGES, type Stage } from '@polyvision/shared';

/**
 * The dependencies between the analysis stages of a job.
 *
 * Pipeline (seeds: orchestration-decision.md): optional Stitch → Detect →
 * Track → (VCam ∥ Analyze) → Encode → Ready.
 */

/** The stage names in pipeline order (shared contract). */
export const STAGE_NAMES = STAGES;

/** One analysis stage; also the suffix of its task topic `polyvision.tasks.<stage>`. */
export type StageName = Stage;

/** Stages each stage waits for. `stitch` is present only in jobs that ask for it. */
export const STAGE_DEPENDENCIES: Readonly<Record<StageName, readonly StageName[]>> = Object.freeze({
  stitch: [],
  detect: ['stitch'],
  track: ['detect'],
  vcam: ['track'],
  analyze: ['track'],
  encode: ['vcam', 'analyze'],
});

/**
 * The stages of a job, in pipeline order.
 *
 * @param withStitch - whether the edge uploaded raw cameras that must be stitched first.
 */
export function pipelineStages(withStitch: boolean): StageName[] {
  return STAGE_NAMES.filter((stage) => withStitch || stage !== 'stitch');
}

/** The stages of `stages` that `stage` waits for (dependencies absent from the job are skipped). */
export function dependenciesOf(stage: StageName, stages: readonly StageName[]): StageName[] {
  return STAGE_DEPENDENCIES[stage].filter((dependency) => stages.includes(dependency));
}

/** `stage` and every stage of `stages` that depends on it, directly or not. */
export function stageAndDownstream(stage: StageName, stages: readonly StageName[]): StageName[] {
  const result = new Set<StageName>([stage]);
  for (const candidate of stages) {
    if (dependenciesOf(candidate, stages).some((dependency) => result.has(dependency))) result.add(candidate);
  }
  return stages.filter((s) => result.has(s));
}
