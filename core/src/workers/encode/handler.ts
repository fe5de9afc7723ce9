import { readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { envInt, loadConfig } from '@polyvision/shared';
import { z } from 'zod';
import {
  type ArtifactIo,
  findInput,
  LocalArtifactIo,
  outputKey,
  stageIoConfig,
  throttle,
  withWorkDir,
} from '../detect/stage-io.ts';
import type { StageHandler } from '../runtime/stage-handler.ts';
import type { StageHandlerContext } from '../runtime/stage-registry.ts';
import { encodeHls } from './encode-hls.ts';

/** Environment of the encode stage. */
export const encodeEnvSchema = z.object({
  ENCODE_SEGMENT_SECONDS: envInt(4, 1, 30),
});

const CONTENT_TYPES: Record<string, string> = {
  m3u8: 'application/vnd.apple.mpegurl',
  ts: 'video/mp2t',
  jpg: 'image/jpeg',
};

async function listFiles(root: string, dir = root): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await listFiles(root, path)));
    else out.push(relative(root, path));
  }
  return out.sort();
}

/**
 * Builds the encode stage: reads the virtual-camera video (kind `vcam`, else
 * the `panorama`), writes the HLS presentation under
 * `<org>/<match>/encode/<version>/hls/` (every playlist and segment; segments
 * are referenced relatively by the playlists) and returns refs to the master
 * playlist (kind `hls`), the media playlists (kind `hls-playlist`) and the
 * poster (kind `poster`).
 */
export function createStageHandler(context: StageHandlerContext, overrides: { io?: ArtifactIo } = {}): StageHandler {
  const env = loadConfig(encodeEnvSchema, context.env);
  const ioConfig = stageIoConfig(context.env);
  const io = overrides.io ?? new LocalArtifactIo(ioConfig.artifactDir, ioConfig.storageId);
  return {
    stage: 'encode',
    async run({ task, signal, reportProgress, logger }) {
      const input = findInput(task, ['vcam', 'panorama', 'camera']);
      return withWorkDir(async (dir) => {
        const outputDir = join(dir, 'hls');
        const summary = await encodeHls({
          inputPath: await io.openInput(input, dir, signal),
          outputDir,
          segmentSeconds: env.ENCODE_SEGMENT_SECONDS,
          signal,
          logger,
          onProgress: throttle((f) => reportProgress(f * 0.9)),
        });
        const outputs = [];
        const files = await listFiles(outputDir);
        for (const [i, file] of files.entries()) {
          const extension = file.split('.').at(-1) ?? '';
          const kind =
            file === 'master.m3u8'
              ? 'hls'
              : file === 'poster.jpg'
                ? 'poster'
                : extension === 'm3u8'
                  ? 'hls-playlist'
                  : 'hls-segment';
          const ref = await io.writeOutput(
            {
              task,
              kind,
              objectKey: outputKey(task, 'hls', ...file.split('/')),
              localPath: join(outputDir, file),
              contentType: CONTENT_TYPES[extension],
            },
            signal,
          );
          if (kind !== 'hls-segment') outputs.push(ref);
          reportProgress(0.9 + (0.1 * (i + 1)) / files.length);
        }
        const order = ['hls', 'hls-playlist', 'poster'];
        outputs.sort((a, b) => order.indexOf(a.kind) - order.indexOf(b.kind));
        return {
          outputs,
          stats: {
            renditions: summary.renditions.length,
            segments: summary.renditions.reduce((s, r) => s + r.segments, 0),
            frames_per_second: Math.round(summary.framesPerSecond * 10) / 10,
          },
        };
      }, ioConfig.workDir);
    },
  };
}
