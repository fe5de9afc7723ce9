import { copyFile, mkdir, readdir, rm } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import type { ArtifactIo, Database, JobView } from '@polyvision/core';
import type { ArtifactRef } from '@polyvision/shared';

/** Files of `out/<match_id>/`, paths relative to it. */
export interface CollectedOutputs {
  panorama: string;
  vcam: string | null;
  cameraPath: string | null;
  /** Tracks, ball and crop window drawn on the panorama (vcam stage). */
  overlay: string | null;
  /** `ball-track.json` of the track stage, when it writes one. */
  ballTrack: string | null;
  hlsMaster: string | null;
  hlsPlaylists: string[];
  poster: string | null;
  detections: string | null;
  tracks: string | null;
  analytics: string | null;
  heatmaps: string[];
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
 * Writes the match folder from the storage elements: the panorama (the job's
 * input) and every stage output the `files` catalog lists for the job, each
 * downloaded through the workers' artifact store (sha256 checked) to
 * `<stage>/<name…>` (`detect/`, `track/`, `vcam/`, `analyze/`, `encode/hls/`).
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
}): Promise<CollectedOutputs & { stored: StoredOutput[] }> {
  const { job, outDir } = options;
  await rm(outDir, { recursive: true, force: true });
  await mkdir(outDir, { recursive: true });
  const panorama = (job.inputs as ArtifactRef[]).find((i) => i.kind === 'panorama') ?? (job.inputs[0] as ArtifactRef);
  await copyFile(await options.io.openInput(panorama, options.workDir), join(outDir, 'panorama.mp4'));
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
  const files = (await listFiles(outDir)).map((f) => relative(outDir, f)).sort();
  const one = (path: string) => (files.includes(path) ? path : null);
  return {
    panorama: 'panorama.mp4',
    vcam: one('vcam/vcam.mp4'),
    cameraPath: one('vcam/camera-path.json'),
    overlay: one('vcam/overlay.mp4'),
    ballTrack: files.find((f) => f.startsWith('track/') && f.endsWith('ball-track.json')) ?? null,
    hlsMaster: one('encode/hls/master.m3u8'),
    hlsPlaylists: files.filter((f) => f.startsWith('encode/hls/') && f.endsWith('.m3u8') && !f.endsWith('master.m3u8')),
    poster: one('encode/hls/poster.jpg'),
    detections: one('detect/detections.jsonl'),
    tracks: one('track/tracks.json'),
    analytics: one('analyze/summary.json'),
    heatmaps: files.filter((f) => f.startsWith('analyze/heatmaps/') && f.endsWith('.png')),
    files,
    stored,
  };
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
