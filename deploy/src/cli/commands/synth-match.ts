/**
 * `polyvision synth-match`: renders a synthetic multi-camera football clip
 * with ground truth (see @polyvision/shared/synthetic/generate.ts).
 */
import { parseArgs } from 'node:util';
import { generateMatch, PolyvisionError, SYNTH_DEFAULTS, type SynthOptions, ValidationError } from '@polyvision/shared';

const HELP = `Usage: pnpm polyvision synth-match --out DIR [options]

Simulates a football match and renders it from a fixed camera rig: one H.264
MP4 per camera, ground truth (MOTChallenge boxes per camera and for the
panorama plane, pitch positions), venue.json (the calibration the edge
stitcher reads) and manifest.json (written last: a folder without it is not a
finished clip).

Options:
  --out DIR              output folder (created if missing)            required
  --cameras N            cameras on the rig, 1–4                        ${SYNTH_DEFAULTS.cameras}
  --duration SECONDS     clip length                                    ${SYNTH_DEFAULTS.durationS}
  --fps N                frames per second                              ${SYNTH_DEFAULTS.fps}
  --width PX             camera width, even                             ${SYNTH_DEFAULTS.widthPx}
  --height PX            camera height, even                            ${SYNTH_DEFAULTS.heightPx}
  --seed N               PRNG seed (same seed → same clip)              ${SYNTH_DEFAULTS.seed}
  --rig-height M         rig height above the pitch, metres             ${SYNTH_DEFAULTS.rigHeightM}
  --rig-setback M        rig distance behind the touchline, metres      ${SYNTH_DEFAULTS.rigSetbackM}
  --panorama             also render panorama.mp4 from the virtual panorama camera
  --panorama-width PX    panorama width, even             0.75 × cameras × width
  --preset NAME          libx264 preset                                 ${SYNTH_DEFAULTS.preset}
  --crf N                libx264 quality (0–51)                         ${SYNTH_DEFAULTS.crf}
  --quiet                no progress output
  -h, --help             this help
`;

/** Option names of generateMatch → the flags that set them, for error messages. */
const FLAGS: Record<string, string> = {
  outDir: 'out',
  cameras: 'cameras',
  durationS: 'duration',
  fps: 'fps',
  widthPx: 'width',
  heightPx: 'height',
  seed: 'seed',
  rigHeightM: 'rig-height',
  rigSetbackM: 'rig-setback',
  panoramaWidthPx: 'panorama-width',
  preset: 'preset',
  crf: 'crf',
};

function number(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) {
    throw new ValidationError('synth_invalid_option', `--${name}=${JSON.stringify(value)}: expected a number`);
  }
  return n;
}

export async function run(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    process.stderr.write(`synth-match: ${(error as Error).message}\n\n${HELP}`);
    return 2;
  }
  const { values } = parsed;
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (!values.out) {
    process.stderr.write(`synth-match: --out DIR is required\n\n${HELP}`);
    return 2;
  }
  let options: SynthOptions;
  try {
    options = {
      outDir: values.out,
      cameras: number('cameras', values.cameras),
      durationS: number('duration', values.duration),
      fps: number('fps', values.fps),
      widthPx: number('width', values.width),
      heightPx: number('height', values.height),
      seed: number('seed', values.seed),
      rigHeightM: number('rig-height', values['rig-height']),
      rigSetbackM: number('rig-setback', values['rig-setback']),
      panoramaWidthPx: number('panorama-width', values['panorama-width']),
      panoramaVideo: values.panorama ?? false,
      preset: values.preset as SynthOptions['preset'],
      crf: number('crf', values.crf),
    };
  } catch (error) {
    process.stderr.write(`synth-match: ${(error as Error).message}\n`);
    return 2;
  }
  const controller = new AbortController();
  const onSignal = () => controller.abort(new Error('interrupted'));
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const quiet = values.quiet ?? false;
  let lastPrint = 0;
  try {
    const manifest = await generateMatch(options, {
      signal: controller.signal,
      onProgress: (done, total) => {
        const now = Date.now();
        if (quiet || (now - lastPrint < 1000 && done !== total)) return;
        lastPrint = now;
        process.stderr.write(`synth-match: frame ${done}/${total}\n`);
      },
    });
    const seconds = manifest.elapsed_ms / 1000;
    process.stdout.write(
      `synth-match: ${manifest.cameras} camera(s) × ${manifest.frame_count} frames (${manifest.duration_s} s) in ${seconds.toFixed(1)} s ` +
        `(${(manifest.duration_s / seconds).toFixed(2)}× real time) → ${values.out}\n`,
    );
    return 0;
  } catch (error) {
    if (error instanceof PolyvisionError) {
      const option = typeof error.details.option === 'string' ? FLAGS[error.details.option] : undefined;
      const where = option ? ` (--${option})` : '';
      process.stderr.write(`synth-match: [${error.code}] ${error.message}${where}\n`);
      return error.code === 'aborted' ? 130 : error instanceof ValidationError ? 2 : 1;
    }
    throw error;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** `--duration -3` → `--duration=-3`, so that a negative number reaches validation and gets its clear error. */
function joinNegativeNumbers(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const next = argv[i + 1];
    if (arg.startsWith('--') && !arg.includes('=') && next !== undefined && /^-\d/.test(next)) {
      out.push(`${arg}=${next}`);
      i++;
    } else out.push(arg);
  }
  return out;
}

function parse(argv: string[]) {
  return parseArgs({
    args: joinNegativeNumbers(argv),
    strict: true,
    allowPositionals: false,
    options: {
      out: { type: 'string' },
      cameras: { type: 'string' },
      duration: { type: 'string' },
      fps: { type: 'string' },
      width: { type: 'string' },
      height: { type: 'string' },
      seed: { type: 'string' },
      'rig-height': { type: 'string' },
      'rig-setback': { type: 'string' },
      panorama: { type: 'boolean' },
      'panorama-width': { type: 'string' },
      preset: { type: 'string' },
      crf: { type: 'string' },
      quiet: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}
