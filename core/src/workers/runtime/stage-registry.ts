import { PolyvisionError, type Stage } from '@polyvision/shared';
import type { ArtifactIo } from '../detect/stage-io.ts';
import type { StageHandler } from './stage-handler.ts';

/** What a stage module gets to build its handler. */
export interface StageHandlerContext {
  /** The process environment (model paths, SE URLs, …). */
  env: Record<string, string | undefined>;
}

/**
 * Where the worker finds each real stage: `core/src/workers/<stage>/handler.ts`
 * exporting `createStageHandler(context): StageHandler | Promise<StageHandler>`.
 * Stage authors: add nothing here; create that file. `overrides.io` replaces
 * the stage's artifact store (the demo reads uploads from storage elements).
 */
export async function loadStageHandler(
  stage: Stage,
  context: StageHandlerContext,
  overrides: { io?: ArtifactIo } = {},
): Promise<StageHandler> {
  let module: {
    createStageHandler?: (
      context: StageHandlerContext,
      overrides?: { io?: ArtifactIo },
    ) => StageHandler | Promise<StageHandler>;
  };
  try {
    module = await import(`../${stage}/handler.ts`);
  } catch (error) {
    throw new PolyvisionError(
      'stage_not_available',
      `stage ${stage} has no handler module (core/src/workers/${stage}/handler.ts): ${(error as Error).message}`,
      { cause: error },
    );
  }
  if (typeof module.createStageHandler !== 'function') {
    throw new PolyvisionError(
      'stage_not_available',
      `core/src/workers/${stage}/handler.ts does not export createStageHandler(context)`,
    );
  }
  const handler = await module.createStageHandler(context, overrides);
  if (handler.stage !== stage) {
    throw new PolyvisionError('stage_not_available', `handler of ${stage} says it is ${handler.stage}`);
  }
  return handler;
}
