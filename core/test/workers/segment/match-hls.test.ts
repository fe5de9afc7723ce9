import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { ArtifactRef } from '@polyvision/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalArtifactIo } from '../../../src/workers/detect/index.ts';
import { createStageHandler } from '../../../src/workers/encode/handler.ts';
import { parseMediaPlaylist } from '../../../src/workers/encode/index.ts';
import { makeClip } from '../support/media.ts';
import { runStage, segmentOf, segmentTask, storeFile } from './support.ts';

const SEGMENTS = 3;
const SEGMENT_S = 2;
const MATCH = 'org-1/match-1/encode/default/match/hls';

let root: string;
let store: string;
let io: LocalArtifactIo;
const clips: ArtifactRef[] = [];
const playlists: string[] = [];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'pv-segment-hls-'));
  store = join(root, 'store');
  io = new LocalArtifactIo(store);
  for (let i = 0; i < SEGMENTS; i++) {
    const path = await makeClip(join(root, `vcam-${i}.mp4`), 'testsrc2=size=320x180:rate=25', SEGMENT_S);
    clips.push(
      await storeFile(store, `org-1/match-1/vcam/default/segment-00000${i}/vcam.mp4`, await readFile(path), 'vcam'),
    );
  }
});
afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

describe('encode appends each segment to the match HLS', () => {
  it('is an EVENT playlist while the match goes on and ends with #EXT-X-ENDLIST after the final segment', async () => {
    const handler = createStageHandler(
      { env: { ENCODE_SEGMENT_SECONDS: '1', WORKER_WORK_DIR: join(root, 'work') } } as never,
      { io },
    );
    let carry: ArtifactRef | undefined;
    for (let i = 0; i < SEGMENTS; i++) {
      const inputs = carry ? [clips[i]!, carry] : [clips[i]!];
      const result = await runStage(handler, segmentTask('encode', inputs, segmentOf(i, SEGMENTS, SEGMENT_S)));
      carry = result.outputs.find((o) => o.kind === 'encode-carry');
      expect(carry?.object_key).toBe(`org-1/match-1/encode/default/segment-00000${i}/encode-carry.json`);
      expect(result.outputs.find((o) => o.kind === 'hls')?.object_key).toBe(`${MATCH}/master.m3u8`);
      const media = result.outputs.find((o) => o.kind === 'hls-playlist')!;
      expect(media.object_key).toBe(`${MATCH}/180p/index.m3u8`);
      playlists.push(await readFile(join(store, media.object_key), 'utf8'));
    }
    for (const [i, text] of playlists.entries()) {
      expect(text).toContain('#EXT-X-PLAYLIST-TYPE:EVENT');
      expect(text.includes('#EXT-X-ENDLIST')).toBe(i === SEGMENTS - 1);
      // Only appended to: each playlist starts with the previous one's segments.
      if (i > 0) {
        const before = parseMediaPlaylist(playlists[i - 1]!);
        expect(parseMediaPlaylist(text).slice(0, before.length)).toEqual(before);
        expect(parseMediaPlaylist(text).length).toBeGreaterThan(before.length);
      }
    }
    // Every URI of the final playlist is a stored segment file of its own match segment.
    const entries = parseMediaPlaylist(playlists.at(-1)!);
    for (const e of entries) {
      const path = resolve(join(store, `${MATCH}/180p`), e.uri);
      expect((await stat(path)).size).toBeGreaterThan(0);
      expect(path).toMatch(/encode\/default\/segment-00000\d\/hls\/180p\/segment_\d+\.ts$/);
    }
    const total = entries.reduce((s, e) => s + e.durationS, 0);
    expect(total).toBeCloseTo(SEGMENTS * SEGMENT_S, 0);
  });

  it('plays through as one presentation on the match clock', async () => {
    const { stdout } = await promisify(execFile)('ffprobe', [
      '-v',
      'error',
      '-show_entries',
      'format=duration,start_time',
      '-of',
      'json',
      join(store, MATCH, 'master.m3u8'),
    ]);
    const format = JSON.parse(stdout).format;
    expect(Number(format.duration)).toBeGreaterThan(SEGMENTS * SEGMENT_S - 0.5);
    expect(Number(format.duration)).toBeLessThan(SEGMENTS * SEGMENT_S + 0.5);
    // The last segment's pieces carry match-clock timestamps (start_s = 4 s), not its own 0.
    const last = parseMediaPlaylist(playlists.at(-1)!).at(-1)!;
    const { stdout: probe } = await promisify(execFile)('ffprobe', [
      '-v',
      'error',
      '-show_entries',
      'format=start_time',
      '-of',
      'json',
      resolve(join(store, `${MATCH}/180p`), last.uri),
    ]);
    expect(Number(JSON.parse(probe).format.start_time)).toBeGreaterThan((SEGMENTS - 1) * SEGMENT_S - 0.1);
    expect(dirname(last.uri)).toBe('../../../segment-000002/hls/180p');
  });

  it('marks a discontinuity where segments were left out of the match, and still plays through', async () => {
    const handler = createStageHandler(
      { env: { ENCODE_SEGMENT_SECONDS: '1', WORKER_WORK_DIR: join(root, 'work') } } as never,
      { io },
    );
    const gap = (index: number, inputs: ArtifactRef[], segment: object) => ({
      ...segmentTask('encode', inputs, { ...segmentOf(index, SEGMENTS, SEGMENT_S), ...segment }),
      model_version: 'gap',
    });
    // Segment 1 failed: segment 2 continues from segment 0's playlists, 2 s of the match later.
    const first = await runStage(handler, gap(0, [clips[0]!], {}));
    const carry = first.outputs.find((o) => o.kind === 'encode-carry')!;
    const third = await runStage(handler, gap(2, [clips[2]!, carry], { carry_from: 0, gap_s: SEGMENT_S }));
    const media = third.outputs.find((o) => o.kind === 'hls-playlist')!;
    const text = await readFile(join(store, media.object_key), 'utf8');
    const lines = text.split('\n');
    const marker = lines.indexOf('#EXT-X-DISCONTINUITY');
    expect(marker).toBeGreaterThan(0);
    expect(lines.filter((l) => l === '#EXT-X-DISCONTINUITY')).toHaveLength(1);
    // Segment 0's pieces before it, segment 2's after it.
    expect(lines.slice(0, marker).some((l) => l.includes('segment-000000/'))).toBe(true);
    expect(lines.slice(0, marker).some((l) => l.includes('segment-000002/'))).toBe(false);
    expect(lines[marker + 2]).toContain('segment-000002/');
    expect(text).toContain('#EXT-X-ENDLIST');
    const { stdout } = await promisify(execFile)('ffprobe', [
      '-v',
      'error',
      '-show_entries',
      'format=duration',
      '-of',
      'json',
      join(store, dirname(media.object_key), '..', 'master.m3u8'),
    ]);
    expect(Number(JSON.parse(stdout).format.duration)).toBeGreaterThan(2 * SEGMENT_S - 0.5);
  });

  it('places a first segment shorter than its slot at the end of the slot: no hole before the next segment', async () => {
    const handler = createStageHandler(
      { env: { ENCODE_SEGMENT_SECONDS: '1', WORKER_WORK_DIR: join(root, 'work') } } as never,
      { io },
    );
    // The edge started recording 1 s into segment 0's 2 s slot.
    const short = await makeClip(join(root, 'vcam-short.mp4'), 'testsrc2=size=320x180:rate=25', 1);
    const firstClip = await storeFile(
      store,
      'org-1/match-1/vcam/short-first/segment-000000/vcam.mp4',
      await readFile(short),
      'vcam',
    );
    const task = (index: number, inputs: ArtifactRef[]) => ({
      ...segmentTask('encode', inputs, segmentOf(index, 2, SEGMENT_S)),
      model_version: 'short-first',
    });
    const first = await runStage(handler, task(0, [firstClip]));
    const carry = first.outputs.find((o) => o.kind === 'encode-carry')!;
    const second = await runStage(handler, task(1, [clips[1]!, carry]));
    const media = second.outputs.find((o) => o.kind === 'hls-playlist')!;
    const { stdout } = await promisify(execFile)('ffprobe', [
      ...['-v', 'error', '-select_streams', 'v:0', '-show_entries', 'packet=pts_time', '-of', 'csv=p=0'],
      join(store, media.object_key),
    ]);
    const pts = stdout
      .split('\n')
      .map((l) => Number.parseFloat(l))
      .filter(Number.isFinite)
      .sort((a, b) => a - b);
    const steps = pts.slice(1).map((t, i) => t - pts[i]!);
    expect(Math.max(...steps)).toBeLessThan(0.1); // 25 fps: no hole between the segments
    // 1 s + 2 s of video end to end (placed at the slot's start, segment 0 would leave a 1 s hole).
    expect(pts.at(-1)! - pts[0]!).toBeCloseTo(3 - 0.04, 1);
  });
});
