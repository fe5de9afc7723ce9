/**
 * Camera-motion compensation (the detect stage measures the camera's motion between analysed frames,
 * the tracker moves its predictions with it) on real footage, as `./polyvision demo` runs it, with
 * the compensation on (shipped) and off (`--camera-motion off`, the baseline) in the same run:
 *
 * - **panning**: a 1920×1080 camera panning and tilting over `tsukuba-left.mp4` (3072×1728), made
 *   with ffmpeg's crop at whole-pixel positions `x = 576 + 500·sin(2πn/125)`, `y = 324 + 150·sin(2πn/175)`
 *   (n: source frame; up to 25 px per source frame, 63 px between analysed frames at 10 fps — a fast
 *   broadcast pan); ground truth: the tsukuba-left silhouette labels moved by the same positions (a
 *   box less than half inside the window becomes an ignore region);
 * - **still window**: the same 1920×1080 window held at its mean position (576, 324) — the control: the
 *   same picture size and people's scale as the panning one (the detector's tiling follows the frame
 *   size), without the pan;
 * - **fixed**: `tsukuba-left.mp4` itself (a fixed rig: nothing to compensate, the cost of finding that out).
 *
 * Per run: HOTA, DetA, AssA, MOTA, IDF1, IDSW on the labelled frames (`eval tracks --gt-frames-only`),
 * the demo's detect step wall time, what the detect stage found (`cameraMotion` counts); then the
 * estimator alone, ms per analysed frame on each clip (decoded at the source size, in this process).
 *
 *   node bench/workers/camera-motion.ts [--gt bench/label/tsukuba-left/gt-silhouette.mot.txt]
 *
 * Needs ../shared/footage/tsukuba-left.mp4. Writes bench/results/camera-motion.json.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  CameraMotionEstimator,
  type DetectionsHeader,
  probeVideo,
  readDetectionsFile,
  readVideoFrames,
} from '../../core/src/workers/detect/index.ts';
import { resolveFfmpegPath } from '../../shared/src/index.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = join(repoRoot, 'deploy', 'src', 'cli', 'main.ts');
const SOURCE = resolve(repoRoot, '..', 'shared', 'footage', 'tsukuba-left.mp4');
const { values } = parseArgs({
  options: { gt: { type: 'string', default: 'bench/label/tsukuba-left/gt-silhouette.mot.txt' } },
});
if (!existsSync(SOURCE)) {
  console.error(`skipped: ${SOURCE} is missing`);
  process.exit(0);
}

const WINDOW = { width: 1920, height: 1080 };
/** A window's top-left corner per source frame n (px) and the same as ffmpeg expressions. */
interface Window {
  x: (n: number) => number;
  y: (n: number) => number;
  expression: { x: string; y: string };
}
const PAN: Window = {
  x: (n: number) => Math.floor(576 + 500 * Math.sin((2 * Math.PI * n) / 125)),
  y: (n: number) => Math.floor(324 + 150 * Math.sin((2 * Math.PI * n) / 175)),
  expression: { x: 'floor(576+500*sin(2*PI*n/125))', y: 'floor(324+150*sin(2*PI*n/175))' },
};
const STILL: Window = { x: () => 576, y: () => 324, expression: { x: '576', y: '324' } };

function run(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (b: Buffer) => (output += b.toString()));
    child.stderr.on('data', (b: Buffer) => (output += b.toString()));
    child.once('exit', (code) => done({ code, output }));
  });
}

/** The ground truth seen through a window (MOT rows; boxes under half inside → ignore rows). */
function windowGroundTruth(text: string, window: Window): string {
  const rows: string[] = [];
  for (const line of text.split('\n')) {
    const f = line.split(',');
    if (f.length < 9) continue;
    const n = Number(f[0]) - 1;
    const [left, top, w, h] = [Number(f[2]) - window.x(n), Number(f[3]) - window.y(n), Number(f[4]), Number(f[5])];
    const x1 = Math.max(0, left);
    const y1 = Math.max(0, top);
    const x2 = Math.min(WINDOW.width, left + w);
    const y2 = Math.min(WINDOW.height, top + h);
    if (x2 <= x1 || y2 <= y1) continue;
    const inside = ((x2 - x1) * (y2 - y1)) / (w * h);
    const ignore = f[6] === '0' || inside < 0.5;
    const box = [x1, y1, x2 - x1, y2 - y1].map((v) => Math.round(v * 10) / 10);
    rows.push([f[0], ignore ? -1 : f[1], ...box, ignore ? 0 : 1, ...f.slice(7)].join(','));
  }
  return `${rows.join('\n')}\n`;
}

/** The width the detect stage decoded at: one tile, the letterbox size; several, the source's. */
function decodeWidth(header: DetectionsHeader): number {
  const t = header.tiling;
  return t && t.columns * t.rows === 1 ? Math.round(header.source.width * t.scale) : header.source.width;
}

const work = await mkdtemp(join(tmpdir(), 'pv-camera-motion-'));
try {
  const gtPath = resolve(repoRoot, values.gt!);
  const gtText = await readFile(gtPath, 'utf8');
  /** A 1920×1080 window over the source moving as `window` says, and its ground truth. */
  const windowClip = async (tag: string, window: Window) => {
    const video = join(work, `${tag}.mp4`);
    const { x, y } = window.expression;
    await new Promise<void>((done, fail) => {
      const ffmpeg = spawn(resolveFfmpegPath(), [
        ...['-v', 'error', '-y', '-i', SOURCE],
        ...['-vf', `format=rgb24,crop=${WINDOW.width}:${WINDOW.height}:x='${x}':y='${y}':exact=1`],
        ...['-c:v', 'libx264', '-preset', 'veryfast', '-crf', '18', '-pix_fmt', 'yuv420p', video],
      ]);
      ffmpeg.once('exit', (code) => (code === 0 ? done() : fail(new Error(`ffmpeg exited ${code}`))));
    });
    const gt = join(work, `${tag}-gt.mot.txt`);
    await writeFile(gt, windowGroundTruth(gtText, window));
    return { video, gt };
  };
  const clips = [
    { name: 'panning 1920×1080 window over tsukuba-left', tag: 'pan', ...(await windowClip('pan', PAN)) },
    { name: 'still 1920×1080 window (control)', tag: 'window', ...(await windowClip('window', STILL)) },
    { name: 'tsukuba-left.mp4 (fixed rig, 3072×1728)', tag: 'fixed', video: SOURCE, gt: gtPath },
  ];
  const runs = [];
  for (const clip of clips) {
    for (const mode of ['on', 'off'] as const) {
      const matchId = `cm-${clip.tag}-${mode}`;
      const out = join(work, 'out');
      const demo = await run([
        'demo',
        '--plain',
        '--cameras',
        clip.video,
        '--match-id',
        matchId,
        '--out',
        out,
        '--camera-motion',
        mode,
      ]);
      if (demo.code !== 0) throw new Error(`demo ${matchId} failed:\n${demo.output.slice(-3000)}`);
      const evaluation = await run([
        'eval',
        'tracks',
        '--gt',
        clip.gt,
        '--pred',
        join(out, matchId, 'track', 'tracks.json'),
        '--gt-frames-only',
        '--json',
      ]);
      if (evaluation.code !== 0) throw new Error(`eval ${matchId} failed:\n${evaluation.output}`);
      const m = JSON.parse(evaluation.output) as Record<string, number>;
      const summary = JSON.parse(await readFile(join(out, matchId, 'demo.json'), 'utf8')) as {
        timings: { step: string; durationMs: number }[];
      };
      const detections = await readDetectionsFile(join(out, matchId, 'detect', 'detections.jsonl'));
      const r1 = (v: number) => Math.round(v * 1000) / 10;
      runs.push({
        clip: clip.name,
        cameraMotion: mode,
        frames: m.frames,
        HOTA: r1(m.HOTA!),
        DetA: r1(m.DetA!),
        AssA: r1(m.AssA!),
        MOTA: r1(m.MOTA!),
        IDF1: r1(m.IDF1!),
        IDSW: m.IDSW,
        detectStepMs: Math.round(summary.timings.find((t) => t.step === 'detect')?.durationMs ?? Number.NaN),
        analysedFrames: detections.frames.length,
        decodeWidthPx: decodeWidth(detections.header),
        measured: detections.header.cameraMotion ?? null,
      });
      console.log(JSON.stringify(runs.at(-1)));
    }
  }
  // The estimator alone, as the detect stage runs it: frames at 10 fps decoded at the size the stage
  // decoded them (one tile: the letterbox size), a new estimator per 5-s segment; and OpenCV's load.
  const loadStarted = performance.now();
  await CameraMotionEstimator.create();
  const openCvLoadMs = Math.round(performance.now() - loadStarted);
  const cost = [];
  for (const clip of clips) {
    const info = await probeVideo(clip.video);
    const run = runs.find((r) => r.clip === clip.name && r.cameraMotion === 'off')!;
    const width = run.decodeWidthPx;
    const height = Math.round((info.height * width) / info.width / 2) * 2;
    let estimator = await CameraMotionEstimator.create(); // a new one per 5-s segment (50 analysed frames)
    const counts = { moving: 0, still: 0, unknown: 0, skipped: 0 };
    const add = () => {
      for (const key of Object.keys(counts) as (keyof typeof counts)[]) counts[key] += estimator.counts[key];
      estimator.close();
    };
    let ms = 0;
    let frames = 0;
    for await (const frame of readVideoFrames(clip.video, { info, fps: 10, width, height })) {
      if (frames > 0 && frames % 50 === 0) {
        add();
        estimator = await CameraMotionEstimator.create();
      }
      const started = performance.now();
      estimator.next(frame, info.width, []);
      ms += performance.now() - started;
      frames += 1;
    }
    add();
    const msPerFrame = ms / frames;
    const detectMsPerFrame = run.detectStepMs / run.analysedFrames;
    cost.push({
      clip: clip.name,
      decoded: `${width}x${height}`,
      frames,
      msPerFrame: Math.round(msPerFrame * 10) / 10,
      detectStepMsPerFrame: Math.round(detectMsPerFrame * 10) / 10,
      shareOfDetect: Math.round((msPerFrame / detectMsPerFrame) * 1000) / 1000,
      counts,
    });
    console.log(JSON.stringify(cost.at(-1)));
  }
  await mkdir(join(repoRoot, 'bench', 'results'), { recursive: true });
  await writeFile(
    join(repoRoot, 'bench', 'results', 'camera-motion.json'),
    `${JSON.stringify({ measured_at: new Date().toISOString(), gt: values.gt, runs, openCvLoadMs, estimator: cost }, null, 2)}\n`,
  );
} finally {
  await rm(work, { recursive: true, force: true });
}
