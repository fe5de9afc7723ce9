import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pitchMappingOf, type VenueCalibration } from '@polyvision/shared';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AnalyticsSummary,
  assignTeams,
  imageSpace,
  isOnPitch,
  type PositionSpace,
  renderHeatmapPng,
  runAnalyze,
  teamBalance,
  trackKinematics,
  tracksCarryColours,
  zoneFrames,
} from '../../../src/workers/analyze/index.ts';
import { TORSO_MEAN_RGB } from '../../../src/workers/detect/index.ts';
import { pitchRegionOf } from '../../../src/workers/track/pitch-region.ts';
import { pitchRegionFromCalibration } from '../../../src/workers/vcam/pitch-region.ts';
import { movingTrack, tracksFile } from '../support/tracks.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pv-analyze-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** 10 px per metre, origin at pixel (525, 340): a 1050×680 image of a 105×68 m pitch. */
const H_PIXELS_TO_PITCH = [
  [0.1, 0, -52.5],
  [0, 0.1, -34],
  [0, 0, 1],
] as const;
const metricSpace: PositionSpace = {
  kind: 'pitch',
  unit: 'm',
  bounds: [-52.5, -34, 52.5, 34],
  fromImage: (u, v) => pitchMappingOf(venue())!.toPitch(u, v),
};

function venue(): VenueCalibration {
  const m = H_PIXELS_TO_PITCH.map((r) => [...r]) as VenueCalibration['panorama']['panorama_to_pitch'];
  const inverse = [
    [10, 0, 525],
    [0, 10, 340],
    [0, 0, 1],
  ] as VenueCalibration['panorama']['panorama_to_pitch'];
  const eye = [
    [1, 0, 0],
    [0, 1, 0],
    [0, 0, 1],
  ] as VenueCalibration['panorama']['rotation'];
  const intrinsics = { fx: 1000, fy: 1000, cx: 525, cy: 340 };
  return {
    version: 1,
    venue_id: 'test-venue',
    pitch: { length_m: 105, width_m: 68 },
    cameras: [
      {
        id: 'camera-0',
        width_px: 1050,
        height_px: 680,
        intrinsics,
        distortion: { k1: 0, k2: 0, p1: 0, p2: 0, k3: 0 },
        rotation: eye,
        translation_m: [0, 0, 30],
        position_m: [0, 0, -30],
        pitch_to_image: inverse,
        image_to_panorama: eye,
      },
    ],
    panorama: {
      projection: 'planar',
      width_px: 1050,
      height_px: 680,
      intrinsics,
      rotation: eye,
      translation_m: [0, 0, 30],
      pitch_to_panorama: inverse,
      panorama_to_pitch: m,
    },
  };
}

describe('homography and kinematics', () => {
  it('maps pixels to metres and refuses points behind the camera', () => {
    const { toPitch } = pitchMappingOf(venue())!;
    expect(toPitch(525, 340)).toEqual([0, 0]);
    expect(toPitch(1050, 680)).toEqual([52.5, 34]);
    // A camera looking down the pitch: pixels above its horizon (v > 10 here) map behind it.
    const tilted = venue();
    tilted.panorama.panorama_to_pitch = [
      [1, 0, 0],
      [0, 1, 0],
      [0, -1, 10],
    ];
    tilted.panorama.pitch_to_panorama = [
      [1, 0, 0],
      [0, 1, 0],
      [0, 0.1, 0.1],
    ];
    expect(pitchMappingOf(tilted)!.toPitch(0, 5)).toEqual([0, 1]);
    expect(pitchMappingOf(tilted)!.toPitch(0, 20)).toBeNull();
  });

  it('measures distance, top speed and sprints of a run', () => {
    // 25 fps; 4 s jogging at 4 m/s (40 px/s) then 2 s sprinting at 8 m/s, then 4 s at 4 m/s.
    const x = (f: number) => {
      const t = f / 25;
      const metres = t <= 4 ? 4 * t : t <= 6 ? 16 + 8 * (t - 4) : 32 + 4 * (t - 6);
      return 100 + metres * 10;
    };
    const track = movingTrack(1, 'player', 250, (f) => [x(f), 300]);
    const k = trackKinematics(track, metricSpace, 25);
    expect(k.distance).toBeGreaterThan(46);
    expect(k.distance).toBeLessThan(49);
    expect(k.maxSpeed).toBeGreaterThan(7.5);
    expect(k.maxSpeed).toBeLessThan(8.2);
    expect(k.sprints).toBe(1);
    expect(k.sprintDistance).toBeGreaterThan(10);
    expect(k.durationSeconds).toBe(10);
  });

  it("takes the top speed over a second of track, not the last step's jump", () => {
    // 10 fps, a steady 4 m/s run whose last foot point drops 0.5 m (the box cut at the clip's end, a
    // partial occlusion): at a track's ends the smoothing window shrinks to nothing.
    const track = movingTrack(1, 'player', 30, (f) => [100 + 4 * f + (f === 29 ? 5 : 0), 300]);
    const k = trackKinematics(track, metricSpace, 10);
    expect(k.maxSpeed).toBeGreaterThan(3.9);
    expect(k.maxSpeed).toBeLessThan(4.6);
    // Step by step the same run "reaches" sprint speed (what the tsukuba pair's report said: 10.8 m/s).
    expect(trackKinematics(track, metricSpace, 10, { topSpeedWindowSeconds: 0.1 }).maxSpeed).toBeGreaterThan(7);
  });

  it('takes no top speed over a span where the id jumps to a player a few metres away', () => {
    // 10 fps, a steady 4 m/s run; at 3 s the track's id moves to another player 7 m ahead, also at 4 m/s.
    // The second holding the jump averages 4 + 7 = 11 m/s, under the 12 m/s cap, but one of its steps is not.
    const track = movingTrack(1, 'player', 60, (f) => [100 + 4 * f + (f >= 30 ? 70 : 0), 300]);
    const k = trackKinematics(track, metricSpace, 10);
    expect(k.maxSpeed).toBeGreaterThan(3.9);
    expect(k.maxSpeed).toBeLessThan(4.6);
    expect(k.distance).toBeLessThan(4 * 6);
  });

  it('ignores impossible jumps (an id switch across the pitch)', () => {
    const track = movingTrack(1, 'player', 50, (f) => [f < 25 ? 200 : 900, 300]);
    const k = trackKinematics(track, metricSpace, 25, { smoothingSeconds: 0 });
    expect(k.distance).toBeLessThan(1);
  });
});

describe('team assignment', () => {
  it('clusters jersey colours into two teams and the rest', () => {
    const samples = new Map<number, [number, number, number][]>();
    const jitter = (c: number, i: number) => Math.max(0, Math.min(255, c + ((i * 37) % 21) - 10));
    for (let id = 1; id <= 5; id++) samples.set(id, [[jitter(220, id), jitter(30, id), jitter(30, id)]]);
    for (let id = 6; id <= 10; id++) samples.set(id, [[jitter(30, id), jitter(40, id), jitter(200, id)]]);
    samples.set(11, [[20, 20, 20]]); // referee in black
    const { teams, colours } = assignTeams(samples, [...Array(12).keys()].slice(1));
    const a = [1, 2, 3, 4, 5].map((id) => teams.get(id));
    const b = [6, 7, 8, 9, 10].map((id) => teams.get(id));
    expect(new Set(a).size).toBe(1);
    expect(new Set(b).size).toBe(1);
    expect(a[0]).not.toBe(b[0]);
    expect(teams.get(11)).toBe('other'); // a colour outlier of both teams
    expect(colours.A).toBeDefined();
  });

  it('clusters only the on-pitch outfield players it is given', () => {
    const samples = new Map<number, [number, number, number][]>();
    for (let id = 1; id <= 4; id++) samples.set(id, [[230, 230, 230]]); // white
    for (let id = 5; id <= 8; id++) samples.set(id, [[200, 20, 20]]); // red
    // A goalkeeper in green-ish yellow, and three coaches in dark blue on the bench.
    samples.set(9, [[200, 220, 40]]);
    for (let id = 10; id <= 12; id++) samples.set(id, [[20, 20, 90]]);
    const all = [...Array(13).keys()].slice(1);
    const { teams } = assignTeams(samples, all, { playerIds: [1, 2, 3, 4, 5, 6, 7, 8] });
    expect([1, 2, 3, 4].map((id) => teams.get(id))).toEqual(['A', 'A', 'A', 'A']); // white is brighter
    expect([5, 6, 7, 8].map((id) => teams.get(id))).toEqual(['B', 'B', 'B', 'B']);
    expect([9, 10, 11, 12].map((id) => teams.get(id))).toEqual(['other', 'other', 'other', 'other']);
  });

  it('leaves out a goalkeeper the detector called a player, though his shirt is nearer one team', () => {
    // The synthetic demo's colours (seed 7): ten grey-white and ten blue outfield shirts, the goalkeepers
    // in pink and khaki, both nearer the white team. Around the cluster's mean (k-means) they stayed in
    // the white team (11.6 v 9.9 players per frame); around its median they are outliers.
    const samples = new Map<number, [number, number, number][]>();
    const white = [
      [157, 171, 177],
      [165, 173, 185],
      [165, 173, 175],
      [166, 174, 182],
      [159, 170, 174],
      [168, 178, 175],
      [150, 163, 166],
      [169, 176, 185],
      [158, 168, 174],
      [154, 162, 165],
    ];
    for (const [i, c] of white.entries()) samples.set(i + 1, [c as [number, number, number]]);
    for (let i = 0; i < 10; i++) samples.set(11 + i, [[34 + (i % 4) * 3, 63 + (i % 3) * 4, 124 + (i % 5) * 3]]);
    samples.set(21, [[174, 101, 122]]); // goalkeeper, pink
    samples.set(22, [[129, 126, 110]]); // goalkeeper, khaki
    const ids = [...samples.keys()];
    const { teams, colours } = assignTeams(samples, ids, { playerIds: ids });
    expect(ids.filter((id) => teams.get(id) === 'A')).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(ids.filter((id) => teams.get(id) === 'B')).toEqual([11, 12, 13, 14, 15, 16, 17, 18, 19, 20]);
    expect([teams.get(21), teams.get(22)]).toEqual(['other', 'other']);
    // The team colour is the median shirt, not pulled toward the goalkeepers.
    expect(colours.A).toEqual([165, 171, 175]);
  });

  it('checks the two teams for balance', () => {
    expect(teamBalance(11, 11)).toEqual({ balanced: true, difference: 0 });
    expect(teamBalance(11, 9).balanced).toBe(true);
    expect(teamBalance(3, 26)).toEqual({ balanced: false, difference: 23 });
    expect(teamBalance(11, 6).balanced).toBe(false);
    expect(teamBalance(0, 0).balanced).toBe(false);
  });

  it('tells on-pitch tracks from bench tracks through the calibration', () => {
    const box = (u: number, v: number) => ({ box: [u - 5, v - 20, u + 5, v] });
    const bounds = metricSpace.bounds;
    expect(isOnPitch([box(525, 340), box(530, 340)], metricSpace.fromImage, bounds)).toBe(true);
    // 10 px per metre: 30 px beyond the touchline is 3 m off (margin 2 m).
    expect(isOnPitch([box(525, 710), box(525, 715)], metricSpace.fromImage, bounds)).toBe(false);
  });
});

describe('heatmap', () => {
  it('paints every pixel of a cell in the cell colour: the hottest cell red over grey, an empty one grey', () => {
    const space = imageSpace(100, 40);
    const seconds = new Float64Array(10 * 4);
    seconds[2 * 10 + 7] = 5; // row 2, column 7
    const png = PNG.sync.read(
      renderHeatmapPng({ columns: 10, rows: 4, cellSize: 10, seconds }, space, { blurCells: 0, pixelsPerCell: 3 }),
    );
    expect([png.width, png.height]).toEqual([30, 12]);
    const pixel = (x: number, y: number) => [...png.data.subarray((y * 30 + x) * 4, (y * 30 + x) * 4 + 4)];
    // ramp(1) = rgb(230, 20, 20) at alpha 240/255 over grey 90.
    const hot = [0, 1, 2].map((j) => Math.round(90 * (15 / 255) + [230, 20, 20][j]! * (240 / 255)));
    for (let y = 6; y < 9; y++) for (let x = 21; x < 24; x++) expect(pixel(x, y)).toEqual([...hot, 255]);
    for (const [x, y] of [
      [20, 7],
      [24, 7],
      [22, 5],
      [22, 9],
      [0, 0],
      [29, 11],
    ] as const) {
      expect(pixel(x, y)).toEqual([90, 90, 90, 255]);
    }
  });
});

/** Tracks 1–3 one team, 4–6 the other, none `other`, no warning. */
function expectTwoTeamsOfThree(summary: AnalyticsSummary): void {
  const teamOf = (id: number) => summary.players.find((p) => p.trackId === id)!.team;
  expect(new Set([1, 2, 3].map(teamOf)).size).toBe(1);
  expect(new Set([4, 5, 6].map(teamOf)).size).toBe(1);
  expect(teamOf(1)).not.toBe(teamOf(4));
  expect(teamOf(1)).not.toBe('other');
  expect(summary.warnings).toEqual([]);
}

describe('runAnalyze', () => {
  it('writes metres, teams from a real video, heatmaps and the summary', async () => {
    // Green pitch with three red and three blue "players" standing still (1050×680, 2 s).
    const boxes = [
      [100, 'red'],
      [250, 'red'],
      [400, 'red'],
      [600, 'blue'],
      [750, 'blue'],
      [900, 'blue'],
    ] as const;
    const draw = boxes.map(([x, c]) => `drawbox=x=${x}:y=300:w=20:h=50:color=${c}:t=fill`).join(',');
    const videoPath = join(dir, 'pano.mp4');
    await new Promise((resolve, reject) =>
      execFile(
        'ffmpeg',
        [
          '-v',
          'error',
          '-y',
          '-f',
          'lavfi',
          '-i',
          'color=c=0x2e7d32:size=1050x680:rate=25:duration=2',
          '-vf',
          draw,
          '-c:v',
          'libx264',
          '-preset',
          'ultrafast',
          '-pix_fmt',
          'yuv420p',
          videoPath,
        ],
        (e) => (e ? reject(e) : resolve(null)),
      ),
    );
    // Each player walks 1 m/s to the right in the tracks (boxes in the video stay put: colours only).
    const tracks = tracksFile(
      boxes.map(([x], i) => movingTrack(i + 1, 'player', 50, (f) => [x + 10 + f * 0.4, 325])),
      50,
      25,
      1050,
      680,
    );
    const outputDir = join(dir, 'analytics');
    const summary = await runAnalyze({ tracks, videoPath, venue: venue(), outputDir, colourSampleFps: 2 });
    expect(summary.unit).toBe('m');
    expect(summary.players).toHaveLength(6);
    expectTwoTeamsOfThree(summary);
    expect(summary.teams.A.playersPerFrame).toBe(3);
    expect(summary.teams.balanced).toBe(true);
    for (const p of summary.players) {
      expect(p.onPitch).toBe(true);
      expect(p.sprints).toBe(0);
      expect(p.distance).toBeGreaterThan(1.7); // ~1.96 m over 1.96 s
      expect(p.distance).toBeLessThan(2.1);
      expect(p.maxSpeed).toBeLessThan(1.3);
    }
    const written = JSON.parse(await readFile(join(outputDir, 'summary.json'), 'utf8'));
    expect(written.heatmaps).toEqual({ all: 'heatmaps/all.png', A: 'heatmaps/team-A.png', B: 'heatmaps/team-B.png' });
    const png = PNG.sync.read(await readFile(join(outputDir, 'heatmaps/all.png')));
    expect([png.width, png.height]).toEqual([105 * 8, 68 * 8]);
    // The hottest spot is where the players stood, not elsewhere.
    const at = (mx: number, my: number) => {
      const o = (Math.floor((my + 34) * 8) * png.width + Math.floor((mx + 52.5) * 8)) * 4;
      return png.data.slice(o, o + 3);
    };
    const hot = at((100 + 10 + 10 - 525) / 10, (350 - 340) / 10);
    const cold = at(0, -30);
    expect(Math.abs(hot[0]! - cold[0]!) + Math.abs(hot[2]! - cold[2]!)).toBeGreaterThan(60);
  });

  it('splits teams by the colours the detect stage stored with the boxes, with no video to decode', async () => {
    const red: [number, number, number] = [200, 30, 30];
    const blue: [number, number, number] = [30, 40, 190];
    const players = [100, 250, 400, 600, 750, 900].map((x, i) => {
      const track = movingTrack(i + 1, 'player', 50, (f) => [x + 10 + f * 0.4, 325]);
      // Colours on every frame, a little noisy; none on interpolated frames (they have no box of their own).
      track.frames.forEach((f, k) => {
        if (k % 7 === 3) f.interpolated = true;
        else f.torso = (i < 3 ? red : blue).map((v) => v + (k % 5) - 2) as [number, number, number];
      });
      return track;
    });
    const tracks = tracksFile(players, 50, 25, 1050, 680);
    tracks.detections = { ...tracks.detections, torsoColour: TORSO_MEAN_RGB };
    expect(tracksCarryColours(tracks)).toBe(true);
    const summary = await runAnalyze({ tracks, venue: venue(), outputDir: join(dir, 'analytics-stored') });
    expectTwoTeamsOfThree(summary);
    // Without the header's word the stored colours are not trusted: no video, no teams.
    const older = { ...tracks, detections: { ...tracks.detections, torsoColour: undefined } };
    const without = await runAnalyze({ tracks: older, venue: venue(), outputDir: join(dir, 'analytics-older') });
    expect(without.warnings.map((w) => w.code)).toContain('no_colours');
  });

  it('names the roles: a team shirt outfield, a shirt of neither team by where it stood, else by its class', async () => {
    // 10 px per metre: the left penalty area is u ≤ 195 (x ≤ −33 m with the 3 m margin), v 108–572; the near
    // touchline band v ≥ 655 (y ≥ 31.5 m).
    const red: [number, number, number] = [200, 30, 30];
    const blue: [number, number, number] = [30, 40, 190];
    const coloured = (
      id: number,
      cls: 'player' | 'referee',
      rgb: [number, number, number],
      at: (f: number) => [number, number],
    ) => {
      const track = movingTrack(id, cls, 50, at);
      for (const f of track.frames) f.torso = rgb;
      return track;
    };
    const tracks = tracksFile(
      [
        ...[300, 400, 500].map((x, i) => coloured(i + 1, 'player', red, (f) => [x + f, 300])),
        ...[600, 700, 800].map((x, i) => coloured(i + 4, 'player', blue, (f) => [x - f, 400])),
        coloured(7, 'player', [40, 200, 60], (f) => [60 + (f % 10), 340]), // green, in the left penalty area
        coloured(8, 'player', [230, 230, 30], (f) => [300 + 4 * f, 665]), // yellow, along the near touchline
        coloured(9, 'referee', [20, 20, 20], (f) => [520, 200 + f]), // black, in midfield
        coloured(10, 'player', [240, 120, 200], (f) => [450, 250 + f]), // pink, in midfield
      ],
      50,
      25,
      1050,
      680,
    );
    tracks.detections = { ...tracks.detections, torsoColour: TORSO_MEAN_RGB };
    const summary = await runAnalyze({ tracks, venue: venue(), outputDir: join(dir, 'analytics-roles') });
    const roleOf = (id: number) => summary.players.find((p) => p.trackId === id)?.role;
    expect([1, 2, 3, 4, 5, 6].map(roleOf)).toEqual(new Array(6).fill('outfield'));
    expect([7, 8, 9, 10].map(roleOf)).toEqual(['goalkeeper', 'assistant_referee', 'referee', 'unknown']);
    // In image pixels there is no "where": the class alone.
    const pixels = await runAnalyze({ tracks, outputDir: join(dir, 'analytics-roles-px') });
    expect([7, 8, 9].map((id) => pixels.players.find((p) => p.trackId === id)?.role)).toEqual([
      'unknown',
      'unknown',
      'referee',
    ]);
    expect(
      zoneFrames(
        [
          { x: -40, y: 0 },
          { x: 40, y: 21 },
          { x: 35, y: 0 }, // 1.5 m in front of the area: where a goalkeeper stands while his team attacks
          { x: 30, y: 0 },
          { x: 0, y: -33 },
        ],
        [-52.5, -34, 52.5, 34],
      ),
    ).toEqual({
      frames: 5,
      penaltyArea: 3,
      touchline: 1,
    });
  });

  it('works in image pixels without a calibration and refuses no tracks', async () => {
    const tracks = tracksFile([movingTrack(1, 'player', 30, (f) => [100 + f, 100])], 30, 25, 640, 360);
    const summary = await runAnalyze({ tracks, outputDir: join(dir, 'pixels') });
    expect(summary.unit).toBe('px');
    // Without a calibration: no distances, speeds or sprints (a pixel is no distance), and it says why.
    expect(summary.players[0]).toMatchObject({ distance: null, maxSpeed: null, sprints: null, onPitch: null });
    expect(summary.warnings.map((w) => w.code)).toEqual(['no_calibration', 'no_pitch_region', 'no_colours']);
    expect(summary.teams.balanced).toBeNull();
    expect(imageSpace(640, 360).bounds).toEqual([0, 0, 640, 360]);
    // A self-calibrated venue without pitch points: no metres and no pitch region from it (its pitch
    // rectangle is only laid over the panorama), and the warning says what to do.
    const unregistered = { ...venue(), quality: { method: 'features' as const, pitch_registered: false } };
    const walking = tracksFile([movingTrack(1, 'player', 30, (f) => [100 + f, 300])], 30, 25, 1050, 680);
    const selfCalibrated = await runAnalyze({ tracks: walking, venue: unregistered, outputDir: join(dir, 'selfcal') });
    expect(selfCalibrated.unit).toBe('px');
    expect(selfCalibrated.warnings[0]?.message).toMatch(/no pitch frame .*--pitch-points/);
    expect(pitchRegionOf(unregistered, 1050, 680)).toBeNull();
    expect(pitchRegionFromCalibration(unregistered)).toBeNull();
    expect(pitchRegionOf(venue(), 1050, 680)).not.toBeNull();
    expect(pitchRegionFromCalibration(venue())).not.toBeNull();
    await expect(
      runAnalyze({ tracks: tracksFile([movingTrack(1, 'ball', 5, () => [1, 1])], 5), outputDir: join(dir, 'none') }),
    ).rejects.toEqual(expect.objectContaining({ code: 'no_tracks', retriable: false }));
  });
});
