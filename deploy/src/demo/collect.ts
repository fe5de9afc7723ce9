import { copyFile, cp, mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { JobView } from '@polyvision/core';

/** Files of `out/<match_id>/`, paths relative to it. */
export interface CollectedOutputs {
  panorama: string;
  vcam: string | null;
  cameraPath: string | null;
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

/**
 * Writes the match folder: `panorama.mp4` and one folder per stage
 * (`detect/`, `track/`, `vcam/`, `analyze/`, `encode/hls/`) copied from the
 * workers' artifact store under `<org>/<match>/<stage>/<model_version>/`.
 * A previous folder of the same match is replaced.
 */
export async function collectOutputs(options: {
  job: JobView;
  artifactDir: string;
  panoramaPath: string;
  outDir: string;
}): Promise<CollectedOutputs> {
  const { job, outDir } = options;
  await rm(outDir, { recursive: true, force: true });
  await mkdir(outDir, { recursive: true });
  await copyFile(options.panoramaPath, join(outDir, 'panorama.mp4'));
  for (const stage of job.stages) {
    const version = stage.model_version.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '_');
    const source = join(options.artifactDir, job.organization_id, job.match_id, stage.stage, version);
    const exists = await stat(source).then(
      (s) => s.isDirectory(),
      () => false,
    );
    if (exists) await cp(source, join(outDir, stage.stage), { recursive: true });
  }
  const files = (await listFiles(outDir)).map((f) => relative(outDir, f)).sort();
  const one = (path: string) => (files.includes(path) ? path : null);
  return {
    panorama: 'panorama.mp4',
    vcam: one('vcam/vcam.mp4'),
    cameraPath: one('vcam/camera-path.json'),
    hlsMaster: one('encode/hls/master.m3u8'),
    hlsPlaylists: files.filter((f) => f.startsWith('encode/hls/') && f.endsWith('.m3u8') && !f.endsWith('master.m3u8')),
    poster: one('encode/hls/poster.jpg'),
    detections: one('detect/detections.jsonl'),
    tracks: one('track/tracks.json'),
    analytics: one('analyze/summary.json'),
    heatmaps: files.filter((f) => f.startsWith('analyze/heatmaps/') && f.endsWith('.png')),
    files,
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
