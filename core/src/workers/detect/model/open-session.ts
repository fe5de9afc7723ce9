import { existsSync } from 'node:fs';
import type { Logger } from '@polyvision/shared';
import { PolyvisionError, silentLogger } from '@polyvision/shared';
import * as ort from 'onnxruntime-node';

/** Which onnxruntime execution provider runs the model. */
export type ExecutionProvider = 'cuda' | 'cpu';

/** An open onnxruntime session, the provider it got and the model file it runs. */
export interface OpenSession {
  session: ort.InferenceSession;
  executionProvider: ExecutionProvider;
  modelPath: string;
}

/**
 * Opens an onnxruntime session (graph optimisations on; intra-op threads sleep between operators
 * unless `threadSpinning`, see `DetectOptions.threadSpinning`). With `'auto'`, tries CUDA first and falls
 * back to CPU when the CUDA provider cannot load (no GPU, no CUDA libraries:
 * the onnxruntime-node GPU binaries are not downloaded on these hosts); the
 * provider taken is logged. A session on the CPU opens `options.cpuModelPath` when given (the model's
 * int8 rendition, `precision.ts`), CUDA always `modelPath`.
 *
 * @throws PolyvisionError `model_invalid` (not retriable) when the file is not
 *   a loadable ONNX model; `execution_provider_unavailable` when `'cuda'` is
 *   demanded and cannot load.
 */
export async function openSession(
  modelPath: string,
  preference: ExecutionProvider | 'auto',
  options: { logger?: Logger; intraOpNumThreads?: number; threadSpinning?: boolean; cpuModelPath?: string } = {},
): Promise<OpenSession> {
  const logger = options.logger ?? silentLogger;
  const base: ort.InferenceSession.SessionOptions = {
    graphOptimizationLevel: 'all',
    logSeverityLevel: 3,
    ...(options.intraOpNumThreads ? { intraOpNumThreads: options.intraOpNumThreads } : {}),
    // Session config entry `session.intra_op.allow_spinning` (the Node binding joins nested keys with dots).
    extra: { session: { intra_op: { allow_spinning: options.threadSpinning ? '1' : '0' } } },
  };
  // Without an NVIDIA device node, CUDA cannot load; skip the attempt (and onnxruntime's loud error line).
  const gpuPresent = existsSync('/dev/nvidiactl') || existsSync('/dev/nvidia0');
  if (preference === 'auto' && !gpuPresent) {
    logger.info({ reason: 'no NVIDIA device' }, 'CUDA execution provider skipped; using CPU');
  } else if (preference !== 'cpu') {
    try {
      const session = await ort.InferenceSession.create(modelPath, {
        ...base,
        logSeverityLevel: 4,
        executionProviders: ['cuda'],
      });
      logger.info({ executionProvider: 'cuda', modelPath }, 'onnxruntime session on CUDA');
      return { session, executionProvider: 'cuda', modelPath };
    } catch (cause) {
      if (preference === 'cuda') {
        throw new PolyvisionError(
          'execution_provider_unavailable',
          `CUDA execution provider cannot load: ${String(cause)}`,
          {
            cause,
          },
        );
      }
      logger.info({ reason: String(cause).slice(0, 200) }, 'CUDA execution provider unavailable; using CPU');
    }
  }
  const cpuModelPath = options.cpuModelPath ?? modelPath;
  try {
    const session = await ort.InferenceSession.create(cpuModelPath, { ...base, executionProviders: ['cpu'] });
    logger.info({ executionProvider: 'cpu', modelPath: cpuModelPath }, 'onnxruntime session on CPU');
    return { session, executionProvider: 'cpu', modelPath: cpuModelPath };
  } catch (cause) {
    throw new PolyvisionError(
      'model_invalid',
      `${cpuModelPath} is not a loadable ONNX model: ${String(cause).slice(0, 300)}`,
      {
        cause,
      },
    );
  }
}
