import { execFile } from 'node:child_process';
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ffprobe, PolyvisionError, resolveFfmpegPath, resolveFfprobePath, spawnChild } from '@polyvision/shared';

/** One panorama segment the demo edge uploads. */
export interface PanoramaSegment {
  /** 0-based, in match order (= the edge's slot in the demo). */
  index: number;
  path: string;
  /** Measured with ffprobe, seconds. */
  durationS: number;
  frameCount: number;
  /** Whether its first frame is a keyframe (ffprobe `key_frame`): a segment decodes on its own. */
  keyframeAtStart: boolean;
}

/**
 * Cuts the edge's panorama into segments of `segmentS` seconds, as the edge's
 * recorder hands them to the spool: one ffmpeg re-encode (H.264 `veryfast`,
 * `-crf 18`, yuv420p, an odd last column/row dropped) with a keyframe forced at every cut (`-force_key_frames
 * expr:gte(t,n_forced*S)`) and the segment muxer cutting there, each segment's
 * timestamps from 0 (`-reset_timestamps 1`). The last segment may be shorter.
 *
 * @param segmentS - segment length, whole seconds ≥ 1 (ingest's `INGEST_SEGMENT_DURATION_S`).
 * @returns the segments in order, each probed (duration, frames, keyframe at the start).
 * @throws PolyvisionError `demo_segment_failed` with ffmpeg's last error line, or when no segment came out.
 */
export async function segmentPanorama(
  panoramaPath: string,
  segmentS: number,
  outDir: string,
  signal?: AbortSignal,
): Promise<PanoramaSegment[]> {
  await mkdir(outDir, { recursive: true });
  const run = spawnChild(
    resolveFfmpegPath(),
    [
      '-nostdin',
      '-v',
      'error',
      '-y',
      '-i',
      panoramaPath,
      '-map',
      '0:v:0',
      '-an',
      // yuv420p needs even sizes: a one-camera rig's odd last column/row is dropped (the pixel frame stays).
      '-vf',
      'crop=trunc(iw/2)*2:trunc(ih/2)*2:0:0',
      '-c:v',
      'libx264',
      '-preset',
      'veryfast',
      '-crf',
      '18',
      '-pix_fmt',
      'yuv420p',
      '-force_key_frames',
      `expr:gte(t,n_forced*${segmentS})`,
      '-f',
      'segment',
      '-segment_time',
      String(segmentS),
      '-reset_timestamps',
      '1',
      '-segment_format',
      'mp4',
      join(outDir, 'segment-%06d.mp4'),
    ],
    { signal, stdout: 'ignore' },
  );
  try {
    await run.done;
  } catch (error) {
    signal?.throwIfAborted();
    throw new PolyvisionError(
      'demo_segment_failed',
      `cannot cut ${panoramaPath} into ${segmentS} s segments: ${run.stderrTail().at(-1) ?? (error as Error).message}`,
      { cause: error },
    );
  }
  const names = (await readdir(outDir)).filter((n) => /^segment-\d{6}\.mp4$/.test(n)).sort();
  if (names.length === 0) throw new PolyvisionError('demo_segment_failed', `no segment came out of ${panoramaPath}`);
  const segments: PanoramaSegment[] = [];
  for (const [index, name] of names.entries()) {
    const path = join(outDir, name);
    const probe = await ffprobe(path);
    segments.push({
      index,
      path,
      durationS: probe.durationSeconds ?? 0,
      frameCount: probe.frameCount ?? 0,
      keyframeAtStart: await firstFrameIsKey(path),
    });
  }
  return segments;
}

/** Whether the first video frame of `path` is a keyframe (ffprobe reads only that frame). */
async function firstFrameIsKey(path: string): Promise<boolean> {
  const { stdout } = await promisify(execFile)(resolveFfprobePath(), [
    '-v',
    'error',
    '-select_streams',
    'v:0',
    '-read_intervals',
    '%+#1',
    '-show_entries',
    'frame=key_frame',
    '-of',
    'csv=p=0',
    path,
  ]);
  return stdout.trim().split('\n')[0]?.split(',')[0]?.trim() === '1';
}
