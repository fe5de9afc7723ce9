import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ArtifactRef } from '@polyvision/shared';
import { PolyvisionError } from '@polyvision/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalArtifactIo } from '../../../src/workers/detect/index.ts';
import { createStageHandler } from '../../../src/workers/vcam/handler.ts';
import type { CropWindow } from '../../../src/workers/vcam/index.ts';
import { makeClip } from '../support/media.ts';
import { movingTrack, tracksFile } from '../support/tracks.ts';
import { runStage, segmentOf, segmentTask, storeFile } from './support.ts';

const SEGMENTS = 2;
const SEGMENT_S = 2;
const FPS = 25;
const FRAMES = SEGMENT_S * FPS;

let root: string;
let store: string;
let io: LocalArtifactIo;
const videos: ArtifactRef[] = [];
const tracks: ArtifactRef[] = [];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'pv-segment-vcam-'));
  store = join(root, 'store');
  io = new LocalArtifactIo(store);
  const clip = await makeClip(join(root, 'panorama.mp4'), `testsrc2=size=640x180:rate=${FPS}`, SEGMENT_S);
  for (let i = 0; i < SEGMENTS; i++) {
    videos.push(
      await storeFile(store, `org-1/match-1/segment-00000${i}/panorama.mp4`, await readFile(clip), 'panorama'),
    );
    // Players speeding up to the right: the camera pans fast across the boundary.
    const list = [1, 2, 3].map((id) =>
      movingTrack(
        id,
        'player',
        FRAMES,
        (f) => {
          const t = (i * FRAMES + f) / FPS;
          return [120 + 30 * t * t + id * 20, 100];
        },
        [8, 24],
      ),
    );
    const file = {
      ...tracksFile(list, FRAMES, FPS, 640, 180),
      segment: { index: i, startS: i * SEGMENT_S, firstMatchFrame: i * FRAMES },
    };
    tracks.push(
      await storeFile(
        store,
        `org-1/match-1/track/default/segment-00000${i}/tracks.json`,
        JSON.stringify(file),
        'tracks',
      ),
    );
  }
});
afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

const handler = (pitchFromImage = false) =>
  createStageHandler(
    {
      env: {
        WORKER_WORK_DIR: join(root, 'work'),
        VCAM_OUTPUT_WIDTH: '256',
        VCAM_OUTPUT_HEIGHT: '144',
        VCAM_OVERLAY: 'false',
        VCAM_PITCH_FROM_IMAGE: pitchFromImage ? 'true' : 'false',
      },
    } as never,
    { io },
  );

describe('vcam stage over a match segment by segment', () => {
  it('renders each segment under its own key and continues the camera across the boundary', async () => {
    const windows: CropWindow[][] = [];
    let carry: ArtifactRef | undefined;
    for (let i = 0; i < SEGMENTS; i++) {
      const inputs = [tracks[i]!, videos[i]!, ...(carry ? [carry] : [])];
      const result = await runStage(handler(), segmentTask('vcam', inputs, segmentOf(i, SEGMENTS, SEGMENT_S)));
      expect(result.outputs.find((o) => o.kind === 'vcam')?.object_key).toBe(
        `org-1/match-1/vcam/default/segment-00000${i}/vcam.mp4`,
      );
      carry = result.outputs.find((o) => o.kind === 'vcam-carry');
      expect(carry).toBeDefined();
      const path = result.outputs.find((o) => o.kind === 'vcam-path')!;
      windows.push(JSON.parse(await readFile(join(store, path.object_key), 'utf8')).windows);
    }
    let inside = 0;
    for (const list of windows) {
      for (let f = 1; f < list.length; f++) inside = Math.max(inside, Math.abs(list[f]!.cx - list[f - 1]!.cx));
    }
    const boundary = Math.abs(windows[1]![0]!.cx - windows[0]!.at(-1)!.cx);
    expect(inside).toBeGreaterThan(0.5);
    expect(boundary).toBeLessThanOrEqual(inside * 1.05);
  });

  it('continues past a segment left out (carry_from, gap_s): renders, the camera starting at rest where it was', async () => {
    const version = (task: ReturnType<typeof segmentTask>) => ({ ...task, model_version: 'gap' });
    const first = await runStage(
      handler(),
      version(segmentTask('vcam', [tracks[0]!, videos[0]!], segmentOf(0, 3, SEGMENT_S))),
    );
    const carry = first.outputs.find((o) => o.kind === 'vcam-carry')!;
    const before = JSON.parse(
      await readFile(join(store, first.outputs.find((o) => o.kind === 'vcam-path')!.object_key), 'utf8'),
    ).windows as CropWindow[];
    // Segment 1 was left out: segment 2 (the second clip's tracks and video) reads segment 0's carry.
    const third = await runStage(
      handler(),
      version(
        segmentTask('vcam', [tracks[1]!, videos[1]!, carry], {
          ...segmentOf(2, 3, SEGMENT_S),
          carry_from: 0,
          gap_s: SEGMENT_S,
        }),
      ),
    );
    expect(third.outputs.find((o) => o.kind === 'vcam')?.object_key).toBe(
      'org-1/match-1/vcam/gap/segment-000002/vcam.mp4',
    );
    const after = JSON.parse(
      await readFile(join(store, third.outputs.find((o) => o.kind === 'vcam-path')!.object_key), 'utf8'),
    ).windows as CropWindow[];
    expect(Math.abs(after[0]!.cx - before.at(-1)!.cx)).toBeLessThan(0.02 * 640);
  });

  it('fails with carry_missing for a later segment without the carry', async () => {
    const error = await runStage(
      handler(),
      segmentTask('vcam', [tracks[1]!, videos[1]!], segmentOf(1, SEGMENTS, SEGMENT_S)),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PolyvisionError);
    expect((error as PolyvisionError).code).toBe('carry_missing');
  });

  it('keeps the grass pitch found on the first segment for the later ones', async () => {
    // Segment 0 is all grass; segment 1 has none: only the carried outline gives it a pitch.
    const green = await makeClip(join(root, 'green.mp4'), `color=c=0x2e8b2e:size=640x180:rate=${FPS}`, SEGMENT_S);
    const black = await makeClip(join(root, 'black.mp4'), `color=c=black:size=640x180:rate=${FPS}`, SEGMENT_S);
    const grass = await storeFile(
      store,
      'org-1/match-1/pitch/segment-000000/panorama.mp4',
      await readFile(green),
      'panorama',
    );
    const none = await storeFile(
      store,
      'org-1/match-1/pitch/segment-000001/panorama.mp4',
      await readFile(black),
      'panorama',
    );
    const pitchOf = async (result: Awaited<ReturnType<typeof runStage>>) =>
      JSON.parse(await readFile(join(store, result.outputs.find((o) => o.kind === 'vcam-path')!.object_key), 'utf8'))
        .pitch;
    const task = (i: number, inputs: ArtifactRef[]) => ({
      ...segmentTask('vcam', inputs, segmentOf(i, SEGMENTS, SEGMENT_S)),
      model_version: 'pitch',
    });
    const first = await runStage(handler(true), task(0, [tracks[0]!, grass]));
    const pitch0 = await pitchOf(first);
    expect(pitch0.source).toBe('grass');
    const carry = first.outputs.find((o) => o.kind === 'vcam-carry')!;
    const second = await runStage(handler(true), task(1, [tracks[1]!, none, carry]));
    expect(await pitchOf(second)).toEqual(pitch0);
    const alone = await runStage(handler(true), task(0, [tracks[1]!, none]));
    expect((await pitchOf(alone)).source).toBe('none');
  });
});
