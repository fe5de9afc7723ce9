import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ArtifactRef } from '@polyvision/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalArtifactIo } from '../../../src/workers/detect/index.ts';
import { createStageHandler as createEncodeHandler } from '../../../src/workers/encode/handler.ts';
import { createStageHandler as createVcamHandler } from '../../../src/workers/vcam/handler.ts';
import { makeClip } from '../support/media.ts';
import { movingTrack, tracksFile } from '../support/tracks.ts';
import { runStage, segmentTask, storeFile } from './support.ts';

// The edge's last segment ends with the recording window, anywhere in its slot: a 5-minute match
// (bench/segments/edge-match.ts) ended 360 ms into its last slot and failed on `clip_too_short`.
const FPS = 25;
const SHORT_S = 0.36;
const FRAMES = Math.round(SHORT_S * FPS);

let root: string;
let store: string;
let io: LocalArtifactIo;
let panorama: ArtifactRef;
let tracks: ArtifactRef;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'pv-short-segment-'));
  store = join(root, 'store');
  io = new LocalArtifactIo(store);
  const clip = await makeClip(join(root, 'panorama.mp4'), `testsrc2=size=640x180:rate=${FPS}`, SHORT_S);
  panorama = await storeFile(store, 'org-1/match-1/segment-000000/panorama.mp4', await readFile(clip), 'panorama');
  const list = [1, 2].map((id) => movingTrack(id, 'player', FRAMES, (f) => [200 + 40 * id + f, 100], [8, 24]));
  const file = { ...tracksFile(list, FRAMES, FPS, 640, 180), segment: { index: 0, startS: 0, firstMatchFrame: 0 } };
  tracks = await storeFile(
    store,
    'org-1/match-1/track/default/segment-000000/tracks.json',
    JSON.stringify(file),
    'tracks',
  );
});
afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

const lastSegment = { index: 0, start_s: 0, duration_s: SHORT_S, final: true };

describe('a match segment shorter than a second (the last one of an edge recording)', () => {
  it('goes through vcam and encode; the same clip as a whole-file job is still refused (clip_too_short)', async () => {
    const vcam = createVcamHandler(
      {
        env: {
          WORKER_WORK_DIR: join(root, 'work'),
          VCAM_OUTPUT_WIDTH: '256',
          VCAM_OUTPUT_HEIGHT: '144',
          VCAM_OVERLAY: 'false',
          VCAM_PITCH_FROM_IMAGE: 'false',
        },
      } as never,
      { io },
    );
    const rendered = await runStage(vcam, segmentTask('vcam', [tracks, panorama], lastSegment));
    const video = rendered.outputs.find((o) => o.kind === 'vcam');
    expect(video?.object_key).toBe('org-1/match-1/vcam/default/segment-000000/vcam.mp4');

    const encode = createEncodeHandler(
      { env: { ENCODE_SEGMENT_SECONDS: '1', WORKER_WORK_DIR: join(root, 'work') } } as never,
      { io },
    );
    const encoded = await runStage(encode, segmentTask('encode', [video!], lastSegment));
    const playlist = encoded.outputs.find((o) => o.kind === 'hls-playlist')!;
    const text = await readFile(join(store, playlist.object_key), 'utf8');
    expect(text).toContain('#EXT-X-ENDLIST');
    const durations = [...text.matchAll(/#EXTINF:([\d.]+),/g)].map((m) => Number(m[1]));
    expect(durations.reduce((a, b) => a + b, 0)).toBeCloseTo(SHORT_S, 1);

    await expect(runStage(encode, segmentTask('encode', [video!]))).rejects.toMatchObject({ code: 'clip_too_short' });
  });
});
