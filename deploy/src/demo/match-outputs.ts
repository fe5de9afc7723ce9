import { readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import {
  mergeSegmentBallTracks,
  mergeSegmentTracks,
  readBallTrackFile,
  readTracksFile,
  writeBallTrackFile,
} from '@polyvision/core';
import { PolyvisionError, resolveFfmpegPath, spawnChild } from '@polyvision/shared';

/**
 * Joins the per-segment videos of a match (same codec and size, each from its
 * segment's time 0) into one file with ffmpeg's concat demuxer and `-c copy`
 * (no re-encode; timestamps made continuous by the demuxer).
 *
 * @param paths - the segments' videos, in match order.
 * @throws PolyvisionError `demo_concat_failed` with ffmpeg's last error line.
 */
export async function concatVideos(paths: readonly string[], outputPath: string, signal?: AbortSignal): Promise<void> {
  const list = join(dirname(outputPath), `.concat-${process.pid}.txt`);
  await writeFile(list, paths.map((p) => `file '${p.replaceAll("'", "'\\''")}'\n`).join(''));
  const run = spawnChild(
    resolveFfmpegPath(),
    ['-nostdin', '-v', 'error', '-y', '-f', 'concat', '-safe', '0', '-i', list, '-c', 'copy', outputPath],
    { signal, stdout: 'ignore' },
  );
  try {
    await run.done;
  } catch (error) {
    signal?.throwIfAborted();
    throw new PolyvisionError(
      'demo_concat_failed',
      `cannot join ${paths.length} segment videos into ${outputPath}: ${run.stderrTail().at(-1) ?? (error as Error).message}`,
      { cause: error },
    );
  } finally {
    await rm(list, { force: true });
  }
}

/**
 * The match's tracks file from its segments' `tracks.json` (each naming its
 * `segment`): `mergeSegmentTracks` (frames and times on the match clock, ids
 * as the carried tracker gave them), written as JSON.
 *
 * @returns the merged file's track count.
 * @throws PolyvisionError `tracks_invalid` from the reader or the merge.
 */
export async function mergeTracksFiles(paths: readonly string[], outputPath: string): Promise<number> {
  const merged = mergeSegmentTracks(await Promise.all(paths.map((p) => readTracksFile(p))));
  await writeFile(outputPath, `${JSON.stringify(merged)}\n`);
  return merged.tracks.length;
}

/**
 * The match's ball track from its segments' `ball-track.json` (each naming its `segment`):
 * `mergeSegmentBallTracks` (frames and times on the match clock, the summary over the match),
 * written atomically.
 *
 * @returns the match's ball-track frames that have a position (not `lost`).
 * @throws PolyvisionError `ball_track_invalid` from the reader or the merge (a segment written
 *   before the track stage named its segment there).
 */
export async function mergeBallTrackFiles(paths: readonly string[], outputPath: string): Promise<number> {
  const merged = mergeSegmentBallTracks(await Promise.all(paths.map((p) => readBallTrackFile(p))));
  await writeBallTrackFile(outputPath, merged);
  return merged.summary.frames - merged.summary.lost;
}

/**
 * The match's detections (JSON lines: a header, then one line per analysed
 * frame) from its segments' files: the first segment's header with the
 * source's `frameCount` and `durationMs` summed, then every segment's frames
 * moved to the match clock, as the track stage's `firstMatchFrame` does: `tMs`
 * + the milliseconds before the segment, `frame` (analysed frame) + those
 * milliseconds × `analysisFps`, `sourceFrame` + the source frames before it
 * (both from the previous headers).
 *
 * @returns analysed frames written.
 * @throws PolyvisionError `demo_detections_invalid` when a file has no header line.
 */
export async function mergeDetectionsFiles(paths: readonly string[], outputPath: string): Promise<number> {
  let header: Record<string, unknown> | null = null;
  const lines: string[] = [];
  let sourceOffset = 0;
  let msOffset = 0;
  for (const path of paths) {
    const rows = (await readFile(path, 'utf8')).split('\n').filter((l) => l.startsWith('{'));
    const first = rows[0] ? (JSON.parse(rows[0]) as Record<string, unknown>) : null;
    const source = first?.source as { frameCount: number; durationMs: number } | undefined;
    const analysisFps = Number(first?.analysisFps);
    if (!first || !source || !(analysisFps > 0)) {
      throw new PolyvisionError('demo_detections_invalid', `${path}: no detections header on the first line`);
    }
    if (!header) header = { ...first, source: { ...source } };
    else {
      const total = header.source as { frameCount: number; durationMs: number };
      total.frameCount += source.frameCount;
      total.durationMs += source.durationMs;
    }
    const frameOffset = Math.round((msOffset / 1000) * analysisFps);
    for (const row of rows.slice(1)) {
      const frame = JSON.parse(row) as { frame: number; sourceFrame?: number; tMs: number };
      lines.push(
        JSON.stringify({
          ...frame,
          frame: frame.frame + frameOffset,
          ...(frame.sourceFrame !== undefined ? { sourceFrame: frame.sourceFrame + sourceOffset } : {}),
          tMs: Math.round((frame.tMs + msOffset) * 1000) / 1000,
        }),
      );
    }
    sourceOffset += source.frameCount;
    msOffset += source.durationMs;
  }
  await writeFile(outputPath, `${[JSON.stringify(header), ...lines].join('\n')}\n`);
  return lines.length;
}

/** What {@link mergeCameraPaths} reads of a segment's `camera-path.json`. */
interface CameraPathJson {
  windows?: unknown[];
  quality?: Record<string, number | null>;
  follow?: Record<string, number>;
  people?: Record<string, number | string>;
  render?: Record<string, number | string>;
  carry?: unknown;
  [key: string]: unknown;
}

/**
 * The match's camera path from its segments' `camera-path.json` (vcam stage,
 * one window per analysed frame): the first segment's file with `windows`
 * concatenated, `follow`, `people` and `render` counts summed, `quality`
 * shares weighted by each segment's windows (`framesWithBall` summed,
 * `maxPanSpeed` the largest, `rmsJerk` the root of the window-weighted mean
 * square); without `carry` (the vcam stage's state for the next segment).
 *
 * @returns windows written.
 * @throws SyntaxError when a file is not JSON.
 */
export async function mergeCameraPaths(paths: readonly string[], outputPath: string): Promise<number> {
  const parts = await Promise.all(paths.map(async (p) => JSON.parse(await readFile(p, 'utf8')) as CameraPathJson));
  const first = parts[0] ?? {};
  const windows = parts.flatMap((p) => p.windows ?? []);
  const sum = (key: 'follow' | 'people' | 'render') => {
    const out: Record<string, number | string> = { ...(first[key] ?? {}) };
    for (const [k, v] of Object.entries(out)) {
      if (typeof v === 'number' && k !== 'firstObservedFrame')
        out[k] = parts.reduce((s, p) => s + Number(p[key]?.[k] ?? 0), 0);
    }
    return out;
  };
  /** Mean of `f(value)` over the parts, weighted by their windows (null: no part has the key). */
  const weighted = (k: string, f: (v: number) => number = (v) => v) => {
    let total = 0;
    let weight = 0;
    for (const p of parts) {
      const v = p.quality?.[k];
      const n = p.windows?.length ?? 0;
      if (typeof v === 'number') {
        total += f(v) * n;
        weight += n;
      }
    }
    return weight > 0 ? total / weight : null;
  };
  const quality: Record<string, number | null> = {};
  for (const k of Object.keys(first.quality ?? {})) {
    if (k === 'framesWithBall') quality[k] = parts.reduce((s, p) => s + Number(p.quality?.[k] ?? 0), 0);
    else if (k === 'maxPanSpeed') quality[k] = Math.max(...parts.map((p) => Number(p.quality?.[k] ?? 0)));
    else if (k === 'rmsJerk') {
      const meanSquare = weighted(k, (v) => v * v);
      quality[k] = meanSquare === null ? null : Math.sqrt(meanSquare);
    } else quality[k] = weighted(k);
  }
  const { carry: _carry, ...rest } = first;
  const merged = {
    ...rest,
    quality,
    ...(first.follow ? { follow: sum('follow') } : {}),
    ...(first.people ? { people: sum('people') } : {}),
    ...(first.render ? { render: sum('render') } : {}),
    segments: parts.length,
    windows,
  };
  await writeFile(outputPath, `${JSON.stringify(merged)}\n`);
  return windows.length;
}
