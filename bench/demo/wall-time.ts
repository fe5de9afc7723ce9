/**
 * Wall time of `pnpm demo` on the default sample (20 s, 3 cameras at
 * 1280×720, 25 fps), per step, embedded drivers (and the real services when
 * --real is given and REDIS_URL, DATABASE_URL, KAFKA_BROKERS are set).
 *
 * Baseline, measured in the same run on the same host: one plain ffmpeg
 * decode of the three camera files (`ffmpeg -i cam.mp4 -f null -`, one after
 * the other), a fixed amount of video work to compare every step against
 * (the host is shared and noisy; ratios travel, seconds do not).
 *
 *   node bench/demo/wall-time.ts [--runs 1] [--real] [--model m.onnx --model-layout yolox]
 *
 * Writes bench/results/demo-wall-time.json.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { resolveFfmpegPath } from '../../shared/src/index.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = join(repoRoot, 'deploy', 'src', 'cli', 'main.ts');

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '1' },
    real: { type: 'boolean', default: false },
    model: { type: 'string' },
    'model-layout': { type: 'string' },
  },
});

function run(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number | null; output: string; ms: number }> {
  const started = performance.now();
  return new Promise((resolvePromise) => {
    const child = spawn(command, args, { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (b: Buffer) => {
      output += b.toString();
    });
    child.stderr.on('data', (b: Buffer) => {
      output += b.toString();
    });
    child.once('exit', (code) => resolvePromise({ code, output, ms: performance.now() - started }));
  });
}

const defaultModel = join(repoRoot, 'core', 'models', 'player-detector', 'player-detector.onnx');
const sharedModel = resolve(repoRoot, '..', 'shared', 'models', 'yolox_nano.onnx');
const modelArgs = values.model
  ? ['--model', values.model, '--model-layout', values['model-layout'] ?? 'auto']
  : existsSync(defaultModel)
    ? []
    : ['--model', sharedModel, '--model-layout', 'yolox'];

const outRoot = await mkdtemp(join(tmpdir(), 'pv-demo-bench-'));
const modes: Array<{ name: string; env: NodeJS.ProcessEnv }> = [];
const embeddedEnv = { ...process.env };
delete embeddedEnv.REDIS_URL;
delete embeddedEnv.DATABASE_URL;
delete embeddedEnv.KAFKA_BROKERS;
modes.push({ name: 'embedded', env: embeddedEnv });
if (values.real) {
  for (const v of ['REDIS_URL', 'DATABASE_URL', 'KAFKA_BROKERS']) {
    if (!process.env[v]) throw new Error(`--real needs ${v} (eval "$(pnpm -s polyvision services up)")`);
  }
  modes.push({ name: 'real-services', env: process.env });
}

const ffmpeg = resolveFfmpegPath();
const results = [];
for (let i = 0; i < Number(values.runs); i++) {
  for (const mode of modes) {
    const matchId = `bench-${mode.name}-${i}-${Date.now().toString(36)}`;
    const demo = await run(
      process.execPath,
      [CLI, 'demo', '--plain', '--out', outRoot, '--match-id', matchId, ...modelArgs],
      mode.env,
    );
    if (demo.code !== 0) throw new Error(`demo failed (${demo.code}):\n${demo.output}`);
    const json = JSON.parse(await readFile(join(outRoot, matchId, 'demo.json'), 'utf8')) as {
      timings: Array<{ step: string; durationMs: number }>;
      totalMs: number;
      analysisFps: number | null;
      vcamSize: string | null;
      job: { stages: Array<{ stage: string; stats: Record<string, number> | null }> };
    };
    // The baseline right after, on the cached sample the demo used.
    const sampleDir = join(repoRoot, '.cache', 'demo', 'synthetic-1280x720-20s-25fps-seed7');
    let decodeMs = 0;
    const manifest = JSON.parse(await readFile(join(sampleDir, 'manifest.json'), 'utf8')) as {
      files: Array<{ path: string; kind: string }>;
    };
    for (const file of manifest.files.filter((f) => f.kind === 'camera_video')) {
      const path = join(sampleDir, file.path);
      const decode = await run(ffmpeg, ['-v', 'error', '-i', path, '-f', 'null', '-']);
      if (decode.code !== 0) throw new Error(`baseline decode of ${path} failed: ${decode.output}`);
      decodeMs += decode.ms;
    }
    const processMs = demo.ms;
    results.push({
      mode: mode.name,
      run: i,
      process_wall_ms: Math.round(processMs),
      demo_total_ms: Math.round(json.totalMs),
      baseline_decode_3_cameras_ms: Math.round(decodeMs),
      ratio_total_to_decode: Math.round((json.totalMs / decodeMs) * 100) / 100,
      ratio_total_to_clip_length: Math.round((json.totalMs / 20_000) * 100) / 100,
      analysis_fps: json.analysisFps,
      vcam_size: json.vcamSize,
      sample_generated_in_this_run: (json.timings.find((t) => t.step === 'sample')?.durationMs ?? 0) > 1_000,
      steps: Object.fromEntries(
        json.timings.map((t) => [
          t.step,
          { ms: Math.round(t.durationMs), ratio_to_decode: Math.round((t.durationMs / decodeMs) * 100) / 100 },
        ]),
      ),
      stage_stats: Object.fromEntries(json.job.stages.map((s) => [s.stage, s.stats])),
    });
    console.log(JSON.stringify(results.at(-1)));
  }
}
await rm(outRoot, { recursive: true, force: true });
await mkdir(join(repoRoot, 'bench', 'results'), { recursive: true });
await writeFile(
  join(repoRoot, 'bench', 'results', 'demo-wall-time.json'),
  `${JSON.stringify({ measured_at: new Date().toISOString(), model: modelArgs, results }, null, 2)}\n`,
);
