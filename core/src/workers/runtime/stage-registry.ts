import type { Logger } from '@polyvision/shared';
import { PolyvisionError, type Stage } from '@polyvision/shared';
import type { Redis } from 'ioredis';
import type { Database } from '../../db/index.ts';
import type { ArtifactIo } from '../artifacts/artifact-io.ts';
import { createArtifactIo } from '../artifacts/create-artifact-io.ts';
import type { StageHandler } from './stage-handler.ts';

/** What a stage module gets to build its handler. */
export interface StageHandlerContext {
  /** The process environment (model paths, SE URLs, …). */
  env: Record<string, string | undefined>;
  /** The worker's database: the `files` catalog of outputs written to storage elements. */
  db?: Database;
  /** The worker's Redis: the capacity cache that output placement reads. */
  redis?: Redis | null;
  logger?: Logger;
}

const ioByContext = new WeakMap<StageHandlerContext, ArtifactIo>();

/**
 * The artifact store of a context, made once per context object and shared by
 * its stages: storage elements when `STORAGE_ELEMENTS`(`_FILE`) is set, else
 * the local folder (artifacts/create-artifact-io.ts).
 *
 * @throws ConfigError for a bad SE list, or SEs without `context.db`.
 */
export function artifactIoFor(context: StageHandlerContext): ArtifactIo {
  let io = ioByContext.get(context);
  if (!io) {
    io = createArtifactIo({ env: context.env, db: context.db, redis: context.redis, logger: context.logger });
    ioByContext.set(context, io);
  }
  return io;
}

/**
 * Where the worker finds each real stage: `core/src/workers/<stage>/handler.ts`
 * exporting `createStageHandler(context): StageHandler | Promise<StageHandler>`.
 * Stage authors: add nothing here; create that file. The stage's artifact
 * store is `overrides.io` when given (the demo's), else {@link artifactIoFor}.
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
  const handler = await module.createStageHandler(context, { io: overrides.io ?? artifactIoFor(context) });
  if (handler.stage !== stage) {
    throw new PolyvisionError('stage_not_available', `handler of ${stage} says it is ${handler.stage}`);
  }
  return handler;
}
