import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { type ArtifactRef, envEnum, envInt, loadConfig } from '@polyvision/shared';
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
import type { StageHandler, StageTask } from '../runtime/stage-handler.ts';
import type { StageHandlerContext } from '../runtime/stage-registry.ts';
import { readCarry, writeCarry } from '../segment/carry.ts';
import { SEGMENT_MIN_CLIP_MS } from '../segment/min-clip.ts';
import { matchOutputKey, segmentFolder } from '../segment/segment-output-key.ts';
import { encodeHls } from './encode-hls.ts';
import { appendMatchSegment, type MatchHlsCarry, matchHlsCarrySchema, parseMediaPlaylist } from './match-hls.ts';

/** Environment of the encode stage. */
export const encodeEnvSchema = z.object({
  ENCODE_SEGMENT_SECONDS: envInt(4, 1, 30),
  /**
   * libx264 preset when there is no NVENC. `superfast` (default): 26 % less encode CPU than
   * `veryfast` for SSIM 0.9937 vs 0.9951 (PSNR 49.8 vs 50.5 dB) on the demo's vcam video
   * (bench/README.md, `bench/segments/stage-cost.ts`).
   */
  ENCODE_X264_PRESET: envEnum(['ultrafast', 'superfast', 'veryfast', 'faster', 'fast', 'medium'] as const, 'superfast'),
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
 *
 * A segment of a match job (`task.segment`, issue #18) encodes its own renditions under
 * `…/encode/<version>/segment-00000k/hls/` with match-clock timestamps, then appends them to the
 * match's HLS at `…/encode/<version>/match/hls/` (`master.m3u8`, `<rung>/index.m3u8`): an EVENT
 * playlist while the match goes on, with `#EXT-X-ENDLIST` after the final segment. Its outputs are
 * the match playlists (kinds `hls`, `hls-playlist`), the segment's poster and the `encode-carry`
 * (the playlists' entries so far); `carry_missing` / `carry_invalid` (not retriable).
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
          x264Preset: env.ENCODE_X264_PRESET,
          ...(task.segment ? { segment: task.segment, minDurationMs: SEGMENT_MIN_CLIP_MS } : {}),
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
        if (task.segment) {
          const carried = await readCarry(task, matchHlsCarrySchema, io, dir, signal);
          const match = await appendToMatchHls(task, carried, outputDir, summary.masterPlaylist, dir, signal);
          // The segment's own playlists stay stored under its folder; the task returns the match's.
          const poster = outputs.filter((r) => r.kind === 'poster');
          outputs.splice(0, outputs.length, ...match.outputs, ...poster);
          const carryRef = await writeCarry(task, match.carry, io, dir, signal);
          if (carryRef) outputs.push(carryRef);
        }
        const order = ['hls', 'hls-playlist', 'poster', 'encode-carry'];
        outputs.sort((a, b) => order.indexOf(a.kind) - order.indexOf(b.kind));
        return {
          outputs,
          stats: {
            renditions: summary.renditions.length,
            segments: summary.renditions.reduce((s, r) => s + r.segments, 0),
            frames_per_second: Math.round(summary.framesPerSecond * 10) / 10,
            ...(task.segment ? { segment: task.segment.index, final: task.segment.final ? 1 : 0 } : {}),
          },
        };
      }, ioConfig.workDir);
    },
  };

  /** Writes the match playlists with this segment appended; returns their refs and the new carry. */
  async function appendToMatchHls(
    task: StageTask,
    carried: MatchHlsCarry | null,
    segmentDir: string,
    masterName: string,
    workDir: string,
    signal: AbortSignal,
  ): Promise<{ outputs: ArtifactRef[]; carry: MatchHlsCarry }> {
    const segment = task.segment!;
    const rungs = (await readdir(segmentDir, { withFileTypes: true }))
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    const ordered = carried ? carried.renditions.map((r) => r.name).filter((n) => rungs.includes(n)) : rungs.sort();
    // From match/hls/<rung>/ up to <version>/, then into segment-00000k/hls/<rung>/.
    const up = `../../../${segmentFolder(segment.index)}/hls`;
    const perRung = [];
    for (const name of carried ? carried.renditions.map((r) => r.name) : ordered) {
      const text = await readFile(join(segmentDir, name, 'index.m3u8'), 'utf8').catch(() => '');
      perRung.push({
        name,
        entries: parseMediaPlaylist(text).map((e) => ({ ...e, uri: `${up}/${name}/${e.uri}` })),
      });
    }
    const appended = appendMatchSegment(carried, perRung, segment.final, (segment.gap_s ?? 0) > 0);
    const matchDir = join(workDir, 'match-hls');
    const outputs: ArtifactRef[] = [];
    await mkdir(matchDir, { recursive: true });
    const masterPath = join(matchDir, 'master.m3u8');
    await copyFile(join(segmentDir, masterName), masterPath);
    outputs.push(
      await io.writeOutput(
        {
          task,
          kind: 'hls',
          objectKey: matchOutputKey(task, 'hls', 'master.m3u8'),
          localPath: masterPath,
          contentType: CONTENT_TYPES.m3u8,
        },
        signal,
      ),
    );
    for (const playlist of appended.playlists) {
      const path = join(matchDir, `${playlist.name}.m3u8`);
      await writeFile(path, playlist.text);
      outputs.push(
        await io.writeOutput(
          {
            task,
            kind: 'hls-playlist',
            objectKey: matchOutputKey(task, 'hls', playlist.name, 'index.m3u8'),
            localPath: path,
            contentType: CONTENT_TYPES.m3u8,
          },
          signal,
        ),
      );
    }
    return { outputs, carry: appended.carry };
  }
}
