import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ffprobe } from '@polyvision/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/support/index.ts';
import { Alarms } from '../src/alarms/index.ts';
import { MatchRecorder } from '../src/recording/index.ts';
import { Spool } from '../src/spool/index.ts';
import { createStitcher, type Stitcher } from '../src/stitch/index.ts';
import { makeClip, type TestClip } from './support/clip.ts';

let clip: TestClip;
let work: string;
let stitcher: Stitcher;

beforeAll(async () => {
  clip = await makeClip();
  work = await mkdtemp(join(tmpdir(), 'edge-capture-'));
  stitcher = await createStitcher(clip.venue, { workDir: join(work, 'maps'), encoder: 'libx264' });
});
afterAll(async () => {
  await clip?.remove();
  if (work) await rm(work, { recursive: true, force: true });
});

/** A TCP port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  return port;
}

describe('recording', () => {
  it('records three synthetic cameras into stitched panorama segments in the spool', async () => {
    const alarms = new Alarms();
    const spool = await Spool.open({ dir: join(work, 'spool-1'), alarms, minFreeBytes: 0 });
    const recorder = new MatchRecorder({
      matchId: 'match-1',
      cameras: clip.venue.cameras.map((c) => ({ id: c.id, source: { kind: 'synthetic', clip_dir: clip.dir } })),
      segmentDurationS: 1,
      spool,
      alarms,
      stitcher,
      // A slot waits for all three cameras however loaded the host (the timeout path: the next test).
      stitchWaitMs: 600_000,
    });
    const controller = new AbortController();
    const running = recorder.run(controller.signal);
    await waitFor(() => spool.journal.all().filter((r) => r.kind === 'panorama').length >= 2, {
      timeoutMs: 20_000,
      message: 'two panorama segments',
    });
    controller.abort();
    await running;
    const rows = spool.journal.all();
    const panoramas = rows.filter((r) => r.kind === 'panorama');
    expect(panoramas.length).toBeGreaterThanOrEqual(2);
    // Camera uploads are off: raw segments were removed after stitching. The only camera rows are the ones
    // no panorama holds, counted as rawKept (a camera running over a second behind the clock on a loaded
    // host puts two segments in one slot), and they are the exception.
    const counters = recorder.counters();
    expect(counters.stitchFailures).toBe(0);
    expect(rows.filter((r) => r.kind === 'camera')).toHaveLength(counters.rawKept);
    expect(counters.rawKept).toBeLessThan(counters.stitched * 3);
    const leftRaw = (
      await Promise.all(clip.venue.cameras.map((c) => readdir(join(spool.dir, 'incoming', 'match-1', c.id))))
    )
      .flat()
      .filter((n) => n.endsWith('.mp4'));
    expect(leftRaw).toEqual([]);
    let frames = 0;
    for (const row of panoramas) {
      const probe = await ffprobe(spool.pathOf(row));
      const video = probe.streams.find((s) => s.codec_type === 'video');
      expect(video?.width).toBe(clip.venue.panorama.width_px);
      const n = video?.nb_read_packets ?? video?.nb_frames ?? 0;
      expect(n).toBeGreaterThan(0);
      frames += n;
    }
    // The first slot may be short (recording starts inside it); together they hold over a second of 25 fps.
    expect(frames).toBeGreaterThan(25);
    // Slots are consecutive wall-clock seconds.
    const seqs = panoramas.map((r) => r.seq).sort();
    expect((seqs.at(-1) as number) - (seqs[0] as number)).toBe(seqs.length - 1);
    expect(alarms.list()).toEqual([]);
    expect(recorder.cameras().every((c) => c.state === 'stopped')).toBe(true);
    spool.close();
  });

  it('raises stitch_behind while the stitcher is slower than the cameras, and clears it when it catches up', async () => {
    const alarms = new Alarms();
    const spool = await Spool.open({ dir: join(work, 'spool-3'), alarms, minFreeBytes: 0 });
    // The real stitcher, held back until released: a host too slow for the rig.
    let release: () => void = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    const slow: Stitcher = {
      ...stitcher,
      stitch: async (inputs, out, signal) => {
        await held;
        return stitcher.stitch(inputs, out, signal);
      },
    };
    const recorder = new MatchRecorder({
      matchId: 'match-3',
      cameras: clip.venue.cameras.map((c) => ({ id: c.id, source: { kind: 'synthetic', clip_dir: clip.dir } })),
      segmentDurationS: 1,
      spool,
      alarms,
      stitcher: slow,
      stitchWaitMs: 600_000,
    });
    const controller = new AbortController();
    const running = recorder.run(controller.signal);
    await waitFor(() => alarms.has('stitch_behind', 'match-3'), { timeoutMs: 30_000, message: 'stitch_behind' });
    const alarm = alarms.list().find((a) => a.code === 'stitch_behind')!;
    expect(alarm.message).toMatch(/\d+ slots \(\d+ s of footage\) wait for the stitcher/);
    expect(recorder.counters().stitchQueueSlots).toBeGreaterThanOrEqual(3);
    expect(recorder.counters().stitched).toBe(0);
    controller.abort();
    release();
    await running;
    expect(alarms.has('stitch_behind', 'match-3')).toBe(false);
    expect(recorder.counters().stitchQueueSlots).toBe(0);
    expect(recorder.counters().stitched).toBeGreaterThanOrEqual(3);
    spool.close();
  });

  it('keeps recording the other cameras when one never connects and one is not a video, with alarms', async () => {
    const alarms = new Alarms();
    const spool = await Spool.open({ dir: join(work, 'spool-2'), alarms, minFreeBytes: 0 });
    const junk = join(work, 'junk.mp4');
    await writeFile(junk, 'not a video at all\n'.repeat(50));
    const recorder = new MatchRecorder({
      matchId: 'match-2',
      cameras: [
        { id: 'camera-0', source: { kind: 'synthetic', clip_dir: clip.dir } },
        {
          id: 'camera-1',
          source: { kind: 'rtsp', url: `rtsp://127.0.0.1:${await closedPort()}/live`, timeout_ms: 500 },
        },
        { id: 'camera-2', source: { kind: 'file', path: junk, loop: true } },
      ],
      segmentDurationS: 1,
      spool,
      alarms,
      stitcher,
      stitchWaitMs: 500,
      restartBaseDelayMs: 200,
      restartMaxDelayMs: 500,
    });
    const controller = new AbortController();
    const running = recorder.run(controller.signal);
    await waitFor(
      () =>
        alarms.has('camera_down', 'camera-1') &&
        alarms.has('camera_down', 'camera-2') &&
        spool.journal.all().filter((r) => r.kind === 'panorama').length >= 2,
      { timeoutMs: 20_000, message: 'alarms for the bad cameras and panoramas from the good one' },
    );
    controller.abort();
    await running;
    const cams = recorder.cameras();
    expect(cams.find((c) => c.cameraId === 'camera-1')?.restarts).toBeGreaterThan(0);
    expect(cams.find((c) => c.cameraId === 'camera-0')?.segments).toBeGreaterThanOrEqual(2);
    const down = alarms.list().find((a) => a.subject === 'camera-2');
    expect(down?.message).toMatch(/Invalid data|invalid|moov/i);
    expect(alarms.has('camera_down', 'camera-0')).toBe(false);
    // Nothing left behind in the incoming folders but lists.
    const left = await readdir(join(spool.dir, 'incoming', 'match-2', 'camera-0'));
    expect(left.filter((n) => n.endsWith('.mp4'))).toEqual([]);
    spool.close();
  });
});
