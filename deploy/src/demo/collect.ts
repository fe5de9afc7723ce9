import { copyFile, mkdir, readdir, rm } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import type { ArtifactIo, Database, JobView } from '@polyvision/core';
import type { ArtifactRef } from '@polyvision/shared';
import {
  concatVideos,
  mergeBallTrackFiles,
  mergeCameraPaths,
  mergeDetectionsFiles,
  mergeTracksFiles,
} from './match-outputs.ts';

/** Files of `out/<match_id>/`, paths relative to it. */
export interface CollectedOutputs {
  panorama: string;
  vcam: string | null;
  cameraPath: string | null;
  /** Tracks, ball and crop window drawn on the panorama (vcam stage). */
  overlay: string | null;
  /** `track/ball-track.json`: the track stage's, or for a match job the one joined from its segments. */
  ballTrack: string | null;
  hlsMaster: string | null;
  hlsPlaylists: string[];
  poster: string | null;
  detections: string | null;
  tracks: string | null;
  analytics: string | null;
  heatmaps: string[];
  /** Segments of the match job whose outputs were collected (`<stage>/segment-00000k/…`); 0 for a one-file job. */
  segments: number;
  /**
   * The match-level files the demo joined from the segments' (not stored on an SE): the vcam and
   * overlay videos (concat demuxer, `-c copy`), the camera path, the merged tracks, ball track and detections on the
   * match clock.
   */
  joined: string[];
  /** Every file written, relative paths, sorted. */
  files: string[];
}

/** Where one stage output was stored. */
export interface StoredOutput {
  /** Path in the match folder. */
  path: string;
  storageId: string;
  sizeBytes: number;
}

/**
 * Writes the match folder from the storage elements: the panorama (the edge's
 * stitched file, `panoramaPath`, for a match job whose inputs are its
 * segments; else the job's input) and every stage output the `files` catalog
 * lists for the job, each downloaded through the workers' artifact store
 * (sha256 checked) to `<stage>/<name…>` — for a match job
 * `<stage>/segment-00000k/…` per segment and `<stage>/match/…` for the
 * match-level outputs (HLS playlists, analytics, heatmaps). From the segments
 * it joins the match's `vcam/vcam.mp4`, `vcam/overlay.mp4`, `vcam/camera-path.json`,
 * `track/tracks.json`, `track/ball-track.json` and `detect/detections.jsonl`
 * ({@link concatVideos}, {@link mergeCameraPaths}, {@link mergeTracksFiles},
 * {@link mergeBallTrackFiles}, {@link mergeDetectionsFiles}).
 * A previous folder of the same match is replaced. Works for a failed job
 * too: whatever the finished stages wrote is collected (the panorama only when
 * the job has not even started a stage).
 */
export async function collectOutputs(options: {
  job: JobView;
  db: Database;
  io: ArtifactIo;
  workDir: string;
  outDir: string;
  /** The whole panorama as the edge stitched it (a match job's inputs are its segments). */
  panoramaPath?: string;
  signal?: AbortSignal;
}): Promise<CollectedOutputs & { stored: StoredOutput[] }> {
  const { job, outDir } = options;
  await rm(outDir, { recursive: true, force: true });
  await mkdir(outDir, { recursive: true });
  if (job.kind === 'match' && options.panoramaPath) await copyFile(options.panoramaPath, join(outDir, 'panorama.mp4'));
  else {
    const panorama = (job.inputs as ArtifactRef[]).find((i) => i.kind === 'panorama') ?? (job.inputs[0] as ArtifactRef);
    await copyFile(await options.io.openInput(panorama, options.workDir), join(outDir, 'panorama.mp4'));
  }
  const rows = await options.db.query<{
    storage_id: string;
    object_key: string;
    size_bytes: string | number;
    sha256: string;
    kind: string;
    output_key: string;
  }>(
    `SELECT storage_id, object_key, size_bytes, sha256, kind, output_key FROM files
     WHERE job_id = $1 AND output_key IS NOT NULL ORDER BY output_key`,
    [job.job_id],
  );
  const stored: StoredOutput[] = [];
  for (const row of rows.rows) {
    // output_key: <org>/<match>/<stage>/<model_version>/<name…>
    const [, , stage, , ...name] = row.output_key.split('/');
    if (!stage || name.length === 0) continue;
    const path = [stage, ...name].join('/');
    const local = await options.io.openInput(
      {
        kind: row.kind,
        storage_id: row.storage_id,
        object_key: row.object_key,
        size_bytes: Number(row.size_bytes),
        sha256: row.sha256,
      },
      options.workDir,
    );
    await mkdir(dirname(join(outDir, path)), { recursive: true });
    await copyFile(local, join(outDir, path));
    stored.push({ path, storageId: row.storage_id, sizeBytes: Number(row.size_bytes) });
  }
  const storedFiles = stored.map((s) => s.path).sort();
  const joined = await joinSegments(outDir, storedFiles, options.signal);
  const segments = new Set(storedFiles.map((f) => SEGMENT_PATH.exec(f)?.[1]).filter(Boolean)).size;
  const files = (await listFiles(outDir)).map((f) => relative(outDir, f)).sort();
  const one = (...paths: string[]) => paths.find((p) => files.includes(p)) ?? null;
  // A match job: HLS, analytics and heatmaps of the match under `<stage>/match/`; one file job: `<stage>/`.
  const hls = files.includes('encode/match/hls/master.m3u8') ? 'encode/match/hls/' : 'encode/hls/';
  const analyze = files.includes('analyze/match/summary.json') ? 'analyze/match/' : 'analyze/';
  return {
    panorama: 'panorama.mp4',
    vcam: one('vcam/vcam.mp4'),
    cameraPath: one('vcam/camera-path.json'),
    overlay: one('vcam/overlay.mp4'),
    ballTrack: one('track/ball-track.json'),
    hlsMaster: one(`${hls}master.m3u8`),
    hlsPlaylists: files.filter((f) => f.startsWith(hls) && f.endsWith('.m3u8') && !f.endsWith('master.m3u8')),
    poster: files.find((f) => f.startsWith('encode/') && f.endsWith('poster.jpg')) ?? null,
    detections: one('detect/detections.jsonl'),
    tracks: one('track/tracks.json'),
    analytics: one(`${analyze}summary.json`),
    heatmaps: files.filter((f) => f.startsWith(`${analyze}heatmaps/`) && f.endsWith('.png')),
    segments,
    joined,
    files,
    stored,
  };
}

/** `<stage>/segment-00000k/<name…>` → `segment-00000k`. */
const SEGMENT_PATH = /^[a-z]+\/(segment-\d{6})\//;

/**
 * The match-level files joined from the segments' outputs (in segment order), where the
 * segments wrote them; returns the paths written.
 */
async function joinSegments(outDir: string, stored: readonly string[], signal?: AbortSignal): Promise<string[]> {
  const perSegment = (stage: string, name: string) =>
    stored.filter((f) => f.startsWith(`${stage}/segment-`) && f.endsWith(`/${name}`)).map((f) => join(outDir, f));
  const joined: string[] = [];
  for (const [name, path] of [
    ['vcam.mp4', 'vcam/vcam.mp4'],
    ['overlay.mp4', 'vcam/overlay.mp4'],
  ] as const) {
    const parts = perSegment('vcam', name);
    if (parts.length === 0 || stored.includes(path)) continue;
    await concatVideos(parts, join(outDir, path), signal);
    joined.push(path);
  }
  const cameraPaths = perSegment('vcam', 'camera-path.json');
  if (cameraPaths.length > 0 && !stored.includes('vcam/camera-path.json')) {
    await mergeCameraPaths(cameraPaths, join(outDir, 'vcam', 'camera-path.json'));
    joined.push('vcam/camera-path.json');
  }
  const tracks = perSegment('track', 'tracks.json');
  if (tracks.length > 0 && !stored.includes('track/tracks.json')) {
    await mergeTracksFiles(tracks, join(outDir, 'track', 'tracks.json'));
    joined.push('track/tracks.json');
  }
  const ballTracks = perSegment('track', 'ball-track.json');
  if (ballTracks.length > 0 && !stored.includes('track/ball-track.json')) {
    await mergeBallTrackFiles(ballTracks, join(outDir, 'track', 'ball-track.json'));
    joined.push('track/ball-track.json');
  }
  const detections = perSegment('detect', 'detections.jsonl');
  if (detections.length > 0 && !stored.includes('detect/detections.jsonl')) {
    await mergeDetectionsFiles(detections, join(outDir, 'detect', 'detections.jsonl'));
    joined.push('detect/detections.jsonl');
  }
  return joined;
}

async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const out: string[] = [];
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await listFiles(path)));
    else out.push(path);
  }
  return out;
}
