/**
 * Virtual-camera render speed: the ffmpeg renderer (sendcmd-driven crop +
 * scale, shipped) against the former per-pixel JavaScript crop (baseline,
 * bench/vcam/render-js.ts), in one run, on the same clip and path.
 *
 *   node bench/vcam/render.ts [--seconds 6] [--panorama out/<match>/panorama.mp4] [--tracks out/<match>/track/tracks.json]
 *
 * Cases: a 3840×1080 test-pattern panorama (25 fps) rendered to 1920×1080
 * (the target: ≥ 2× real time on 2 cores), and, with --panorama, the
 * demo's own panorama at the demo's own (auto) size. libx264 veryfast CRF 20
 * for the baseline (its shipped settings); the ffmpeg renderer at its shipped
 * settings (superfast, CRF 18: vcam.mp4 is an intermediate the encode stage
 * re-encodes) and again at the baseline's. With --tracks, the panorama's camera path is
 * planned from that match's own tracks (the demo's zooms and pans) instead of the drifting group. Wall time depends on the host's load; CPU seconds (this
 * process and its ffmpeg children, /proc/self/stat) do not, and give the
 * real-time factor on 2 free cores. Writes bench/results/vcam-render.json.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { probeVideo } from '../../core/src/workers/detect/frames/index.ts';
import type { TracksFile } from '../../core/src/workers/track/index.ts';
import { chooseVcamSizing, planCameraPath, renderVirtualCamera } from '../../core/src/workers/vcam/index.ts';
import { renderVirtualCameraJs } from './render-js.ts';

const { values } = parseArgs({
  options: { seconds: { type: 'string' }, panorama: { type: 'string' }, tracks: { type: 'string' } },
});
const seconds = Number(values.seconds ?? 6);
const work = await mkdtemp(join(tmpdir(), 'pv-vcam-bench-'));

/**
 * CPU seconds used so far by this process and its waited-for children
 * (utime + stime + cutime + cstime of /proc/self/stat, proc(5)): the render's
 * ffmpeg children (and, for the baseline, this process's JS crop) are counted,
 * the host's other load is not.
 */
function cpuSeconds(): number {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
  const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
  return ticks / 100;
}

/** A path over `W×H`: a group of players drifting right and back, zooming with their spread. */
function tracksFor(W: number, H: number, fps: number, frames: number): TracksFile {
  const tracks = Array.from({ length: 8 }, (_, i) => ({
    id: i + 1,
    class: 'player' as const,
    frames: Array.from({ length: frames }, (_, frame) => {
      const t = frame / fps;
      const x = W * (0.3 + 0.3 * Math.sin(t / 3)) + i * W * 0.02 * (1 + 0.5 * Math.sin(t));
      const y = H * 0.5 + ((i % 3) - 1) * H * 0.1;
      return {
        frame,
        tMs: t * 1000,
        box: [x - 10, y - 25, x + 10, y + 25] as [number, number, number, number],
        score: 0.9,
      };
    }),
  }));
  return {
    format: 'polyvision.tracks',
    version: 1,
    detections: {
      format: 'polyvision.detections',
      version: 1,
      source: { width: W, height: H, fps, frameCount: frames, durationMs: (frames / fps) * 1000 },
      analysisFps: fps,
      model: {
        version: 'bench',
        sha256: 'bench',
        layout: 'yolov8',
        inputWidth: 640,
        inputHeight: 640,
        executionProvider: 'cpu',
        tiles: 1,
      },
      classes: ['player'],
    },
    tracker: { name: 'bench', options: {} },
    frameCount: frames,
    tracks,
  };
}

async function measure(name: string, inputPath: string, size?: { w: number; h: number }, tracksPath?: string) {
  const info = await probeVideo(inputPath);
  const frames = Math.min(info.frameCount, Math.round(seconds * info.fps));
  const clip = join(work, `${name}.mp4`);
  execFileSync('ffmpeg', ['-v', 'error', '-y', '-i', inputPath, '-frames:v', String(frames), '-c', 'copy', clip]);
  const sizing = chooseVcamSizing({
    sourceWidth: info.width,
    sourceHeight: info.height,
    outputWidth: size?.w,
    outputHeight: size?.h,
  });
  const tracks = tracksPath
    ? (JSON.parse(readFileSync(tracksPath, 'utf8')) as TracksFile)
    : tracksFor(info.width, info.height, info.fps, frames);
  const path = planCameraPath(tracks, {
    minCropWidthPx: sizing.minCropWidthPx,
    aspectRatio: sizing.outputWidth / sizing.outputHeight,
  });
  const common = {
    inputPath: clip,
    path,
    outputWidth: sizing.outputWidth,
    outputHeight: sizing.outputHeight,
    encoder: 'libx264' as const,
  };
  const c0 = cpuSeconds();
  const ff = await renderVirtualCamera({ ...common, outputPath: join(work, `${name}-ffmpeg.mp4`) });
  const c1 = cpuSeconds();
  const js = await renderVirtualCameraJs({ ...common, outputPath: join(work, `${name}-js.mp4`) });
  const c2 = cpuSeconds();
  // The ffmpeg renderer with the baseline's encoder settings (veryfast, CRF 20): what the filter graph alone gains.
  const same = await renderVirtualCamera({
    ...common,
    x264Preset: 'veryfast',
    quality: 20,
    outputPath: join(work, `${name}-ffmpeg-vf.mp4`),
  });
  const c3 = cpuSeconds();
  const durationS = ff.frames / info.fps;
  // Real-time factor on 2 cores from CPU time: video seconds per (CPU seconds / 2), i.e. assuming the
  // work spreads over both cores (libx264 and ffmpeg's decoder are threaded); the wall figure is the host's.
  const onTwoCores = (cpu: number) => durationS / (cpu / 2);
  const row = {
    case: name,
    source: `${info.width}x${info.height}@${info.fps}`,
    output: `${sizing.outputWidth}x${sizing.outputHeight}`,
    frames: ff.frames,
    ffmpeg: {
      wallFps: ff.framesPerSecond,
      wallRealTime: durationS / (ff.elapsedMs / 1000),
      cpuSeconds: c1 - c0,
      realTimeOnTwoCoresByCpu: onTwoCores(c1 - c0),
      cropCommands: ff.cropCommands,
      cropSizeChanges: ff.cropSizeChanges,
    },
    ffmpegVeryfastCrf20: {
      wallFps: same.framesPerSecond,
      cpuSeconds: c3 - c2,
      realTimeOnTwoCoresByCpu: onTwoCores(c3 - c2),
    },
    jsBaseline: {
      wallFps: js.framesPerSecond,
      wallRealTime: durationS / (js.elapsedMs / 1000),
      cpuSeconds: c2 - c1,
      realTimeOnTwoCoresByCpu: onTwoCores(c2 - c1),
    },
    loadAverage1m: loadavg()[0],
  };
  process.stdout.write(`${JSON.stringify(row)}\n`);
  return row;
}

try {
  const pattern = join(work, 'pattern.mp4');
  execFileSync('ffmpeg', [
    '-v',
    'error',
    '-y',
    '-f',
    'lavfi',
    '-i',
    `testsrc2=size=3840x1080:rate=25:duration=${seconds}`,
    '-c:v',
    'libx264',
    '-preset',
    'ultrafast',
    '-crf',
    '18',
    '-pix_fmt',
    'yuv420p',
    pattern,
  ]);
  const rows = [await measure('pattern-3840x1080-to-1080p', pattern, { w: 1920, h: 1080 })];
  if (values.panorama) rows.push(await measure('demo-panorama-auto-size', values.panorama, undefined, values.tracks));
  const result = { date: new Date().toISOString(), cpus: cpus().length, cpuModel: cpus()[0]?.model, seconds, rows };
  await writeFile(
    join(import.meta.dirname, '..', 'results', 'vcam-render.json'),
    `${JSON.stringify(result, null, 2)}\n`,
  );
} finally {
  await rm(work, { recursive: true, force: true });
}
