/**
 * Options of the synthetic match generator, validated and filled once
 * ({@link compileSynthOptions}) before any work starts.
 */
import { z } from 'zod';
import { ValidationError } from '../errors/index.ts';

/** What a caller may set; see {@link SYNTH_DEFAULTS} for the defaults. */
export interface SynthOptions {
  /** Output folder (created if missing). */
  outDir: string;
  /** Number of cameras, 1–4. @defaultValue 3 */
  cameras?: number;
  /** Clip length in seconds, > 0 and ≤ 3600. @defaultValue 20 */
  durationS?: number;
  /** Frames per second, integer 1–120. @defaultValue 25 */
  fps?: number;
  /** Camera image width in pixels, even (H.264 4:2:0), 64–4096. @defaultValue 1280 */
  widthPx?: number;
  /** Camera image height in pixels, even, 64–4096. @defaultValue 720 */
  heightPx?: number;
  /** PRNG seed: same seed and options → same match and same pictures. @defaultValue 7 */
  seed?: number;
  /** Rig height above the pitch, metres (10–60). @defaultValue 20 */
  rigHeightM?: number;
  /** Rig distance behind the near touchline, metres (5–100). @defaultValue 30 */
  rigSetbackM?: number;
  /** Panorama width, pixels, even; @defaultValue 0.75 · cameras · widthPx rounded to even, at most 8192 */
  panoramaWidthPx?: number;
  /** Also render `panorama.mp4` directly from the virtual panorama camera. @defaultValue false */
  panoramaVideo?: boolean;
  /** libx264 preset. @defaultValue 'veryfast' */
  preset?: 'ultrafast' | 'superfast' | 'veryfast' | 'faster' | 'fast' | 'medium';
  /** libx264 constant rate factor (0–51, lower is better). @defaultValue 20 */
  crf?: number;
  /** Keyframe interval in frames. @defaultValue 2 · fps */
  gopFrames?: number;
  /** `venue_id` in venue.json. @defaultValue `synthetic-<seed>` */
  venueId?: string;
}

export const SYNTH_DEFAULTS = Object.freeze({
  cameras: 3,
  durationS: 20,
  fps: 25,
  widthPx: 1280,
  heightPx: 720,
  seed: 7,
  rigHeightM: 20,
  rigSetbackM: 30,
  panoramaVideo: false,
  preset: 'veryfast' as const,
  crf: 20,
});

const even = (name: string) =>
  z
    .number()
    .int(`${name} must be an integer`)
    .min(64, `${name} must be at least 64`)
    .max(8192, `${name} must be at most 8192`)
    .refine((v) => v % 2 === 0, `${name} must be even (H.264 with 4:2:0 chroma needs even sizes)`);

const schema = z.object({
  outDir: z.string().min(1, 'the output folder (--out) is required'),
  cameras: z
    .number()
    .int('cameras must be an integer')
    .min(1, 'cameras must be at least 1')
    .max(4, 'cameras must be at most 4'),
  durationS: z
    .number()
    .gt(0, 'duration must be greater than 0 seconds')
    .max(3600, 'duration must be at most 3600 seconds'),
  fps: z.number().int('fps must be an integer').min(1, 'fps must be at least 1').max(120, 'fps must be at most 120'),
  widthPx: even('width').max(4096, 'width must be at most 4096'),
  heightPx: even('height').max(4096, 'height must be at most 4096'),
  seed: z
    .number()
    .int('seed must be an integer')
    .min(0, 'seed must be ≥ 0')
    .max(2 ** 31 - 1, 'seed must be < 2^31'),
  rigHeightM: z.number().min(10, 'rig height must be at least 10 m').max(60, 'rig height must be at most 60 m'),
  rigSetbackM: z.number().min(5, 'rig setback must be at least 5 m').max(100, 'rig setback must be at most 100 m'),
  panoramaWidthPx: even('panorama width'),
  panoramaVideo: z.boolean(),
  preset: z.enum(['ultrafast', 'superfast', 'veryfast', 'faster', 'fast', 'medium']),
  crf: z.number().int().min(0).max(51, 'crf must be 0–51'),
  gopFrames: z.number().int().min(1, 'gop must be at least 1 frame'),
  venueId: z.string().min(1).max(128),
});

/** The filled, validated options. */
export type CompiledSynthOptions = z.infer<typeof schema> & {
  /** Number of frames: `round(durationS · fps)`, at least 1. */
  frameCount: number;
};

/**
 * Fills defaults and validates.
 * @throws ValidationError `synth_invalid_option` naming the option, the value and what was expected.
 */
export function compileSynthOptions(options: SynthOptions): CompiledSynthOptions {
  const cameras = options.cameras ?? SYNTH_DEFAULTS.cameras;
  const widthPx = options.widthPx ?? SYNTH_DEFAULTS.widthPx;
  const fps = options.fps ?? SYNTH_DEFAULTS.fps;
  const seed = options.seed ?? SYNTH_DEFAULTS.seed;
  const autoPanoramaWidth = Math.min(8192, 2 * Math.round((0.75 * cameras * widthPx) / 2));
  const filled = {
    ...SYNTH_DEFAULTS,
    gopFrames: 2 * fps,
    venueId: `synthetic-${seed}`,
    ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)),
    panoramaWidthPx:
      options.panoramaWidthPx ??
      (Number.isFinite(autoPanoramaWidth) && autoPanoramaWidth >= 64 ? autoPanoramaWidth : 64),
  };
  const parsed = schema.safeParse(filled);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const key = String(issue?.path[0] ?? 'options');
    const value = (filled as Record<string, unknown>)[key];
    throw new ValidationError(
      'synth_invalid_option',
      `${key}=${JSON.stringify(value)}: ${issue?.message ?? 'invalid'}`,
      {
        details: { option: key, value },
      },
    );
  }
  return { ...parsed.data, frameCount: Math.max(1, Math.round(parsed.data.durationS * parsed.data.fps)) };
}
