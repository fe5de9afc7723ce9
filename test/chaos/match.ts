import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { CLI_MAIN } from '../../deploy/src/cluster/index.ts';
import type { ChaosCluster } from './cluster.ts';

const run = promisify(execFile);

/** A rendered synthetic panorama, ready to upload. */
export interface SyntheticPanorama {
  file: string;
  body: Buffer;
  sha256: string;
}

/** Shape of the synthetic match (`polyvision synth-match`). */
export interface SyntheticMatchShape {
  /** Length of the match, in seconds. @defaultValue 6 */
  durationS?: number;
  /** Frames per second. @defaultValue 10 */
  fps?: number;
  /** Width of each of the 3 cameras, in pixels (the panorama is 0.75 × 3 × this). @defaultValue 640 */
  widthPx?: number;
  /** @defaultValue 360 */
  heightPx?: number;
}

/**
 * Renders a small synthetic match once (`polyvision synth-match --panorama`,
 * three cameras, `panorama.mp4`) into `dir`; a folder that already holds it
 * (its `manifest.json` is written last) is reused.
 */
export async function renderSyntheticPanorama(
  dir: string,
  { durationS = 6, fps = 10, widthPx = 640, heightPx = 360 }: SyntheticMatchShape = {},
): Promise<SyntheticPanorama> {
  const done = await access(path.join(dir, 'manifest.json')).then(
    () => true,
    () => false,
  );
  if (!done) {
    await run(process.execPath, [
      CLI_MAIN,
      ...['synth-match', '--out', dir, '--cameras', '3', '--duration', String(durationS), '--fps', String(fps)],
      ...['--width', String(widthPx), '--height', String(heightPx), '--panorama', '--quiet'],
    ]);
  }
  const file = path.join(dir, 'panorama.mp4');
  const body = await readFile(file);
  return { file, body, sha256: createHash('sha256').update(body).digest('hex') };
}

/** tus `Upload-Metadata`: comma-separated `key base64(value)` pairs (tus 1.0.0, Creation extension). */
function uploadMetadata(fields: Record<string, string>): string {
  return Object.entries(fields)
    .map(([key, value]) => `${key} ${Buffer.from(value).toString('base64')}`)
    .join(',');
}

/**
 * Uploads the panorama as match `matchId` with a real tus 1.0.0 upload
 * (by default the creation on `ingest-1`, the bytes through `ingest-2`:
 * uploads are not tied to a replica); the upload becomes a job
 * `job-<uploadId>`, which is returned.
 *
 * @param via - the replicas that take the creation and the PATCH.
 * @throws Error with the status and body of a refused request.
 */
export async function submitMatch(
  cluster: ChaosCluster,
  panorama: SyntheticPanorama,
  matchId: string,
  via: { create?: string; patch?: string } = {},
): Promise<string> {
  const { state } = cluster;
  const replicas = cluster.names('ingest');
  const first = cluster.process(via.create ?? replicas[0] ?? 'ingest-1');
  const second = cluster.process(via.patch ?? replicas[1] ?? first.name);
  const auth = { authorization: `Bearer ${state.edgeToken}`, 'tus-resumable': '1.0.0' };
  const created = await fetch(`${first.url}/api/v1/uploads`, {
    method: 'POST',
    headers: {
      ...auth,
      'upload-length': String(panorama.body.length),
      'upload-metadata': uploadMetadata({
        organization_id: state.organizationId,
        match_id: matchId,
        kind: 'panorama',
        filename: 'panorama.mp4',
        sha256: panorama.sha256,
      }),
    },
  });
  if (created.status !== 201) throw new Error(`tus creation: ${created.status} ${await created.text()}`);
  const location = created.headers.get('location') as string;
  const patched = await fetch(new URL(location, `${second.url}/api/v1/uploads/`), {
    method: 'PATCH',
    headers: { ...auth, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
    body: panorama.body,
  });
  if (patched.status !== 204) throw new Error(`tus PATCH: ${patched.status} ${await patched.text()}`);
  return `job-${location.split('/').at(-1)}`;
}
