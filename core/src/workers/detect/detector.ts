import type { Logger } from '@polyvision/shared';
import { PolyvisionError, silentLogger } from '@polyvision/shared';
import * as ort from 'onnxruntime-node';
import { decodeYolov8, decodeYolox } from './decode/decode-yolo.ts';
import { type ModelLayout, type ResolvedLayout, resolveLayout } from './decode/layout.ts';
import {
  type CompiledDetectOptions,
  compileDetectOptions,
  type DetectionClass,
  type DetectOptions,
} from './detect-options.ts';
import type { Detection } from './detections-format.ts';
import { fuseFlipPasses, mirrorChw } from './flip-fusion.ts';
import type { BoxXyxy, Region } from './geometry.ts';
import { type BgrImage, type InputSpec, type LetterboxTransform, letterboxInto, letterboxScale } from './letterbox.ts';
import { type ModelVerifier, readModelCard } from './model/model-card.ts';
import { type ExecutionProvider, openSession } from './model/open-session.ts';
import { int8Rendition, type ModelPrecision } from './model/precision.ts';
import { resolveModel } from './model/resolve-model.ts';
import { type Candidate, classWiseNms } from './nms.ts';
import { chooseTileGrid, type GridInputs, nativeScaleGrid, planTiles, type TileGrid } from './tiling.ts';
import { Verifier, type VerifierTarget } from './verify/index.ts';

/** How frames of one source size are analysed. */
export interface DetectPlan {
  sourceWidth: number;
  sourceHeight: number;
  /** Size ffmpeg should decode frames at (the letterboxed size when there is one tile). */
  decodeWidth: number;
  decodeHeight: number;
  /** Tiles in decoded-frame pixels. */
  tiles: Region[];
  /**
   * Size of this plan's input tensors (model-input px): the model's input, or — for a model whose input
   * height and width are symbolic (a fully convolutional export) — the tiles' size at their scale
   * rounded up to {@link INPUT_SIZE_MULTIPLE}, so no rows of letterbox padding are inferred for nothing
   * (a 2880×392 panorama's 3 tiles: 1280×480 instead of 1280×720).
   */
  inputWidth: number;
  inputHeight: number;
  /** The grid and the source → model-input magnification of its tiles. */
  grid: TileGrid;
  /**
   * Decoded-frame → model-input magnification every region of `tiles` is inferred at: the grid's
   * tile scale, also for a row's tiles joined into one strip ({@link Detector.plan}).
   */
  tileScale: number;
  /** Expected person height (source px) the grid was chosen for, when known. */
  personHeightPx: number | undefined;
  /**
   * Where the grid came from: a hint, a first-pass estimate, `unknown` (auto
   * tiling without a person height: the whole frame), a fixed grid, off.
   */
  gridSource: 'hint' | 'estimated' | 'unknown' | 'grid' | 'off';
}

/** A fitted input's height and width are multiples of this (the largest stride of the YOLO family's heads). */
export const INPUT_SIZE_MULTIPLE = 32;

/** People classes: one kind of object (merged score, one NMS group); their box heights set the tiling scale. */
export const PERSON_CLASSES: ReadonlySet<string> = new Set(['player', 'goalkeeper', 'referee']);
/** The classes each verifier looks at: people, or the ball. */
const VERIFIER_CLASSES: Record<VerifierTarget, ReadonlySet<string>> = {
  person: PERSON_CLASSES,
  ball: new Set(['ball']),
};

/** What {@link Detector.estimatePersonHeight} found. */
export interface PersonHeightEstimate {
  /**
   * The `personHeightPercentile`th percentile (option, default 25) of the heights of confident person boxes, source px;
   * undefined when fewer than `minPeople` were found.
   */
  personHeightPx: number | undefined;
  /** Confident person boxes seen. */
  people: number;
  frames: number;
}

/** Frames preprocessed into one input tensor, ready for {@link Detector.infer}. */
export interface PreparedBatch {
  tensor: ort.Tensor;
  frameCount: number;
  /** One per image in the tensor: which frame, how to map back, and whether it is the mirrored pass's. */
  items: { frame: number; transform: LetterboxTransform; mirrored: boolean }[];
  plan: DetectPlan;
  /** The frames themselves (decoded at `plan.decodeWidth × decodeHeight`), for the verifiers' windows. */
  frames: readonly BgrImage[];
}

/** What an open detector runs with (for logs, headers, idempotency keys). */
export interface DetectorInfo {
  modelVersion: string;
  sha256: string;
  layout: ModelLayout;
  classCount: number;
  inputWidth: number;
  inputHeight: number;
  batchSize: number;
  executionProvider: ExecutionProvider;
  /** Precision of the file the session runs (`sha256` is that file's: the int8 rendition's for `int8`). */
  precision: ModelPrecision;
  /** The model's training scale: a typical person's height in input pixels (tiling target). */
  modelPersonHeightPx: number;
  /** Tiles are inferred at their own size ({@link DetectPlan.inputWidth}), not the nominal input. */
  inputFitted: boolean;
  /** A row of scale-chosen tiles is inferred as one strip ({@link Detector.plan}). */
  tileStrips: boolean;
  /** The person verifier that rescores person boxes (the model card's), when one runs. */
  verifier?: { sha256: string; weight: number };
  /** The ball verifier that rescores ball boxes (the model card's), when one runs. */
  ballVerifier?: { sha256: string; weight: number };
}

/**
 * A YOLO-family ONNX detector: letterbox preprocessing, batched inference,
 * layout decoding, class-wise NMS, tiling for wide frames and a class map.
 * Open once per worker with {@link Detector.open}, reuse for many clips, then `close()`.
 */
export class Detector {
  readonly info: DetectorInfo;
  readonly options: CompiledDetectOptions;
  readonly #session: ort.InferenceSession;
  readonly #spec: InputSpec;
  readonly #resolved: ResolvedLayout;
  readonly #classIds: number[];
  /** The model class id of each detection class (the first, when a class map names one class twice). */
  readonly #classIdOf = new Map<DetectionClass, number>();
  readonly #personClassIds: ReadonlySet<number>;
  readonly #floors: Record<number, number>;
  /**
   * The card's verifiers (people first, then the ball), each with the score under which its boxes are
   * dropped after verification (their class floor; they are decoded from the verifier's candidate floor).
   */
  readonly #verifiers: { verifier: Verifier; applies: (d: Detection) => boolean; minScore: number }[];
  readonly #inputName: string;
  readonly #outputName: string;
  /** Whether tensors may take each plan's own size (symbolic input height and width, boxes decoded in the graph). */
  readonly #fitsInput: boolean;
  /** Input buffers handed back after inference, reused by `prepare` (no 2 MB allocation per frame). */
  readonly #pool: Float32Array[] = [];

  private constructor(
    session: ort.InferenceSession,
    options: CompiledDetectOptions,
    info: DetectorInfo,
    spec: InputSpec,
    resolved: ResolvedLayout,
    verifiers: Verifier[],
  ) {
    this.#fitsInput = info.inputFitted;
    this.#session = session;
    this.options = options;
    this.info = info;
    this.#spec = spec;
    this.#resolved = resolved;
    this.#classIds = Object.keys(options.classMap).map(Number);
    for (const id of this.#classIds)
      if (!this.#classIdOf.has(options.classMap[id]!)) this.#classIdOf.set(options.classMap[id]!, id);
    // Merged person score (noisy-OR) over the person classes; `max` leaves every class on its own.
    this.#personClassIds = new Set(
      options.personScore === 'max' ? [] : this.#classIds.filter((id) => PERSON_CLASSES.has(options.classMap[id]!)),
    );
    this.#floors = {};
    this.#verifiers = verifiers.map((verifier) => {
      const classes = VERIFIER_CLASSES[verifier.target];
      const floors = this.#classIds
        .filter((id) => classes.has(options.classMap[id]!))
        .map((id) => options.classScoreFloors[options.classMap[id]!] ?? options.scoreThreshold);
      return {
        verifier,
        applies: (d: Detection) => classes.has(d.class),
        minScore: floors.length ? Math.min(...floors) : options.scoreThreshold,
      };
    });
    for (const id of this.#classIds) {
      const name = options.classMap[id]!;
      const floor = options.classScoreFloors[name];
      if (floor !== undefined) this.#floors[id] = floor;
      // A verifier looks at the card's candidates (or from a lower floor a user set); its fused score then
      // meets the class's floor.
      const verifier = verifiers.find((v) => VERIFIER_CLASSES[v.target].has(name));
      if (verifier) this.#floors[id] = Math.min(floor ?? options.scoreThreshold, verifier.card.candidateFloor);
    }
    this.#inputName = session.inputNames[0]!;
    this.#outputName = session.outputNames[0]!;
  }

  /**
   * Resolves the model (path or URL+sha256), opens the session (CUDA else
   * CPU, logged), and checks the output layout with one inference on a blank input.
   *
   * @throws PolyvisionError (not retriable): `detect_options_invalid`,
   *   `model_not_found`, `model_checksum_mismatch`, `model_invalid` (not ONNX,
   *   or not one image input), `model_layout_unsupported`, `class_map_invalid`;
   *   `model_download_failed` (retriable for network/5xx).
   */
  static async open(options: DetectOptions, context: { logger?: Logger; signal?: AbortSignal } = {}) {
    const compiled = compileDetectOptions(options);
    const logger = context.logger ?? silentLogger;
    const model = await resolveModel(compiled.model, context.signal);
    const card = await readModelCard(model.path);
    const int8 = await int8Rendition(model, compiled.precision, { logger, card });
    // `int8` runs the rendition on any provider; `auto` on the CPU only.
    const { session, executionProvider, modelPath } = await openSession(
      compiled.precision === 'int8' && int8 ? int8.path : model.path,
      compiled.executionProvider,
      {
        logger,
        intraOpNumThreads: compiled.intraOpNumThreads,
        threadSpinning: compiled.threadSpinning,
        ...(int8 ? { cpuModelPath: int8.path } : {}),
      },
    );
    const running = int8 && modelPath === int8.path ? int8 : { ...model, precision: 'fp32' as const };
    try {
      const meta = session.inputMetadata[0];
      const shape = meta?.isTensor ? meta.shape : undefined;
      if (shape?.length !== 4 || session.outputNames.length < 1) {
        throw new PolyvisionError(
          'model_invalid',
          `model input must be one NCHW image tensor, got ${JSON.stringify(shape ?? session.inputNames)}`,
        );
      }
      const fixed = (d: number | string | undefined) => (isFixed(d) ? d : undefined);
      // A symbolic height and width: the nominal size the tiling plans for is the model card's, else the option.
      const nominal = fixed(shape[2]) && fixed(shape[3]) ? undefined : card?.input;
      if (fixed(shape[1]) !== undefined && shape[1] !== 3) {
        throw new PolyvisionError('model_invalid', `model input must have 3 channels, has ${shape[1]}`);
      }
      const inputHeight = fixed(shape[2]) ?? nominal?.height ?? compiled.inputSize;
      const inputWidth = fixed(shape[3]) ?? nominal?.width ?? compiled.inputSize;
      const batchSize = fixed(shape[0]) ?? compiled.batchSize;
      // One blank inference reveals the real output shape (metadata may be symbolic).
      const probe = new ort.Tensor('float32', new Float32Array(batchSize * 3 * inputWidth * inputHeight), [
        batchSize,
        3,
        inputHeight,
        inputWidth,
      ]);
      let dims: readonly number[];
      try {
        const out = await session.run({ [session.inputNames[0]!]: probe });
        dims = out[session.outputNames[0]!]!.dims;
      } catch (cause) {
        throw new PolyvisionError(
          'model_invalid',
          `model does not run on a ${inputWidth}×${inputHeight} image: ${String(cause)}`,
          {
            cause,
          },
        );
      }
      const resolved = resolveLayout([1, ...dims.slice(1)], compiled.layout, inputWidth, inputHeight);
      for (const id of Object.keys(compiled.classMap).map(Number)) {
        if (id >= resolved.classCount) {
          throw new PolyvisionError(
            'class_map_invalid',
            `class map names model class ${id}, but the model has ${resolved.classCount} classes`,
          );
        }
      }
      // Tiles at their own size: a symbolic height and width, boxes decoded in the graph, and a probe
      // 32 px shorter runs (a model whose strides need other multiples is fed the nominal size).
      const inputFitted =
        compiled.fitInputToTiles &&
        resolved.layout === 'yolov8' &&
        fixed(shape[2]) === undefined &&
        fixed(shape[3]) === undefined &&
        (await runsAtSize(
          session,
          [batchSize, 3, Math.max(32, inputHeight - 32), inputWidth],
          logger,
          'tiles are fed at the nominal size',
        ));
      // A row of tiles as one strip: the fitted model must also run wider than its nominal input (probed
      // on a 64-px-high image: whether a width is accepted does not depend on the height, and start-up
      // stays short).
      const stripsFit =
        inputFitted &&
        compiled.tileStrips &&
        (await runsAtSize(session, [1, 3, 64, 2 * inputWidth], logger, 'tiles are not joined into strips'));
      const yolox = resolved.layout === 'yolox';
      const spec: InputSpec = {
        inputWidth,
        inputHeight,
        channelOrder: compiled.input?.channelOrder ?? (yolox ? 'bgr' : 'rgb'),
        valueScale: compiled.input?.valueScale ?? (yolox ? 1 : 1 / 255),
        padValue: compiled.input?.padValue ?? 114,
        placement: compiled.input?.placement ?? (yolox ? 'top-left' : 'center'),
      };
      const info: DetectorInfo = {
        modelVersion: compiled.modelVersion,
        sha256: running.sha256,
        precision: running.precision,
        layout: resolved.layout,
        classCount: resolved.classCount,
        inputWidth,
        inputHeight,
        batchSize,
        executionProvider,
        modelPersonHeightPx: compiled.tiling.modelPersonHeightPx ?? Math.round(0.1 * inputHeight),
        inputFitted,
        tileStrips: stripsFit,
      };
      // The card's verifiers, trained on this detector's candidates (its float model's sha256).
      const open = async (target: VerifierTarget, entry: ModelVerifier | undefined): Promise<Verifier | null> =>
        compiled.verifier === 'auto' && entry && detectsClasses(compiled, target)
          ? Verifier.open(model.path, model.sha256, target, entry, {
              executionProvider,
              logger,
              ...(compiled.intraOpNumThreads ? { intraOpNumThreads: compiled.intraOpNumThreads } : {}),
            })
          : null;
      const verifiers: Verifier[] = [];
      try {
        for (const [target, entry] of [
          ['person', card?.verifier],
          ['ball', card?.ballVerifier],
        ] as const) {
          const verifier = await open(target, entry);
          if (!verifier) continue;
          verifiers.push(verifier);
          info[target === 'person' ? 'verifier' : 'ballVerifier'] = {
            sha256: verifier.card.sha256,
            weight: verifier.card.weight,
          };
        }
      } catch (error) {
        await Promise.all(verifiers.map((v) => v.close()));
        throw error;
      }
      logger.info(info, 'detector ready');
      return new Detector(session, compiled, info, spec, resolved, verifiers);
    } catch (error) {
      await session.release();
      throw error;
    }
  }

  /** Frame and model facts for the tiling rule. */
  #gridInputs(width: number, height: number): GridInputs {
    const t = this.options.tiling;
    return {
      frameWidth: width,
      frameHeight: height,
      inputWidth: this.#spec.inputWidth,
      inputHeight: this.#spec.inputHeight,
      overlapFraction: t.overlapFraction,
      maxTiles: t.maxTiles,
      maxUpscale: t.maxUpscale,
    };
  }

  /**
   * Plans tiles and the decode size for frames of `width × height` source
   * pixels. `'auto'` tiling uses `personHeightPx` (else the option's hint; else
   * the native-scale grid, see `tiling.ts`); `'grid'` and `'off'` ignore it.
   */
  plan(width: number, height: number, personHeightPx?: number, estimated = false): DetectPlan {
    const t = this.options.tiling;
    const inputs = this.#gridInputs(width, height);
    const wholeScale = Math.min(this.#spec.inputWidth / width, this.#spec.inputHeight / height);
    let grid: TileGrid;
    let gridSource: DetectPlan['gridSource'];
    const hint = personHeightPx ?? t.personHeightPx;
    if (t.mode === 'off') {
      grid = { columns: 1, rows: 1, scale: wholeScale };
      gridSource = 'off';
    } else if (t.mode === 'grid') {
      grid = { columns: t.columns, rows: t.rows, scale: 0 };
      gridSource = 'grid';
    } else if (hint !== undefined) {
      grid = chooseTileGrid(inputs, hint, this.info.modelPersonHeightPx);
      gridSource = estimated && personHeightPx !== undefined ? 'estimated' : 'hint';
    } else {
      // No person height known (no person class, or too few people in the first pass): the whole frame.
      grid = { columns: 1, rows: 1, scale: wholeScale };
      gridSource = 'unknown';
    }
    const tiles = planTiles(width, height, {
      columns: grid.columns,
      rows: grid.rows,
      overlapFraction: t.overlapFraction,
    });
    grid.scale = Math.min(...tiles.map((r) => letterboxScale(r.width, r.height, this.#spec)));
    const common = { sourceWidth: width, sourceHeight: height, grid, personHeightPx: hint, gridSource };
    if (this.info.tileStrips && (gridSource === 'hint' || gridSource === 'estimated') && grid.columns > 1) {
      // A model that takes any input size infers each row of tiles as one strip at the tiles' scale:
      // the same magnification, without the columns' overlap inferred twice or people cut at a seam.
      const strips = Array.from({ length: grid.rows }, (_, r) => {
        const first = tiles[r * grid.columns]!;
        return { x: 0, y: first.y, width, height: first.height };
      });
      return this.#fitted({
        ...common,
        decodeWidth: width,
        decodeHeight: height,
        tiles: strips,
        tileScale: grid.scale,
      });
    }
    if (tiles.length === 1) {
      // One tile: let ffmpeg scale to the letterboxed size, so preprocessing is a copy.
      const scale = letterboxScale(width, height, this.#spec);
      if (scale < 1) {
        const decodeWidth = Math.min(this.#spec.inputWidth, Math.round(width * scale));
        const decodeHeight = Math.min(this.#spec.inputHeight, Math.round(height * scale));
        const region = { x: 0, y: 0, width: decodeWidth, height: decodeHeight };
        return this.#fitted({
          ...common,
          decodeWidth,
          decodeHeight,
          tiles: [region],
          tileScale: this.#tileScale(region),
        });
      }
    }
    return this.#fitted({ ...common, decodeWidth: width, decodeHeight: height, tiles, tileScale: grid.scale });
  }

  /** The plan with its tensor size: the model's input, or the tiles at their scale when the model takes any size. */
  #fitted(plan: Omit<DetectPlan, 'inputWidth' | 'inputHeight'>): DetectPlan {
    const { inputWidth, inputHeight } = this.#spec;
    if (!this.#fitsInput) return { ...plan, inputWidth, inputHeight };
    const round = (px: number) => Math.ceil(px / INPUT_SIZE_MULTIPLE) * INPUT_SIZE_MULTIPLE;
    let width = 0;
    let height = 0;
    for (const r of plan.tiles) {
      width = Math.max(width, Math.round(r.width * plan.tileScale));
      height = Math.max(height, Math.round(r.height * plan.tileScale));
    }
    // A tile fits the nominal input (its scale is the letterbox's); a strip may be wider.
    const cap = (px: number, nominal: number) => (px <= nominal ? Math.min(nominal, round(px)) : round(px));
    return { ...plan, inputWidth: cap(width, inputWidth), inputHeight: cap(height, inputHeight) };
  }

  /** Decoded-frame → model-input magnification of a tile: the letterbox into the model's (nominal) input. */
  #tileScale(region: Region): number {
    return letterboxScale(region.width, region.height, this.#spec);
  }

  /**
   * The first pass of `'auto'` tiling: detects on `frames` (source size) and
   * returns the `personHeightPercentile`th percentile (option, default 25) of the heights of
   * person boxes (player, goalkeeper, referee) scoring ≥ `minScore` (default: the `confidentScore`
   * option), when at least `minPeople` were found. A low percentile, so that a few near people (a
   * static rig sees the near touchline at 2–3× the far side's height) do not pull the estimate up
   * and leave the far, small people below the model's training scale. Looks at the
   * whole frame first; when that finds too few people, or people small
   * enough that the rule would tile (the smallest may then be missing from
   * the whole-frame look, biasing the estimate up), looks again with the
   * native-scale grid (`nativeScaleGrid`), which sees small people better.
   *
   * @throws PolyvisionError `inference_failed` (retriable).
   */
  async estimatePersonHeight(
    frames: readonly BgrImage[],
    options: { minScore?: number; minPeople?: number } = {},
  ): Promise<PersonHeightEstimate> {
    const first = frames[0];
    if (!first) return { personHeightPx: undefined, people: 0, frames: 0 };
    const inputs = this.#gridInputs(first.width, first.height);
    const minPeople = options.minPeople ?? 5;
    const minScore = options.minScore ?? this.options.confidentScore;
    const whole = await this.#personHeights(frames, { columns: 1, rows: 1, scale: 0 }, minScore);
    const enough = whole.heights.length >= minPeople;
    if (enough) {
      // Trusted when the rule would not tile anyway; otherwise small people may be missing from it.
      const chosen = chooseTileGrid(inputs, whole.typical, this.info.modelPersonHeightPx);
      if (chosen.columns * chosen.rows === 1) {
        return { personHeightPx: whole.typical, people: whole.heights.length, frames: frames.length };
      }
    }
    const native = nativeScaleGrid(inputs);
    if (native.columns * native.rows === 1) {
      return {
        personHeightPx: enough ? whole.typical : undefined,
        people: whole.heights.length,
        frames: frames.length,
      };
    }
    const tiled = await this.#personHeights(frames, native, minScore);
    const best = tiled.heights.length >= whole.heights.length ? tiled : whole;
    return {
      personHeightPx: best.heights.length >= minPeople ? best.typical : undefined,
      people: best.heights.length,
      frames: frames.length,
    };
  }

  /** Person box heights (source px, ascending) detected on `frames` with `grid`, and their low percentile. */
  async #personHeights(
    frames: readonly BgrImage[],
    grid: TileGrid,
    minScore: number,
  ): Promise<{ heights: number[]; typical: number }> {
    const { width, height } = frames[0]!;
    const tiles = planTiles(width, height, { ...grid, overlapFraction: this.options.tiling.overlapFraction });
    const plan: DetectPlan = this.#fitted({
      sourceWidth: width,
      sourceHeight: height,
      decodeWidth: width,
      decodeHeight: height,
      tiles,
      grid,
      tileScale: Math.min(...tiles.map((r) => this.#tileScale(r))),
      personHeightPx: undefined,
      gridSource: 'unknown',
    });
    const heights: number[] = [];
    const perBatch = this.framesPerBatch(plan);
    for (let i = 0; i < frames.length; i += perBatch) {
      const detections = await this.infer(this.prepare(frames.slice(i, i + perBatch), plan));
      for (const d of detections.flat()) {
        if (PERSON_CLASSES.has(d.class) && d.score >= minScore) heights.push(d.box[3] - d.box[1]);
      }
    }
    heights.sort((a, b) => a - b);
    return { heights, typical: percentileOf(heights, this.options.personHeightPercentile) };
  }

  /** Frames (whole) that fit in one inference batch under `plan`; at least 1. */
  framesPerBatch(plan: DetectPlan): number {
    return Math.max(1, Math.floor(this.info.batchSize / (plan.tiles.length * this.#passes())));
  }

  /** Inference passes per tile: 2 with flip test-time augmentation. */
  #passes(): number {
    return this.options.testTimeAugmentation === 'flip' ? 2 : 1;
  }

  /**
   * Letterboxes frames (decoded at `plan.decodeWidth × decodeHeight`) into one
   * input tensor. Synchronous, so it can run while the previous batch infers.
   * A fixed-batch model gets its batch padded with blank images. Input
   * buffers are recycled once `infer` has run them, so a prepared batch must
   * be inferred once, and not reused afterwards.
   */
  prepare(frames: readonly BgrImage[], plan: DetectPlan): PreparedBatch[] {
    const { inputWidth: W, inputHeight: H } = plan;
    const spec = { ...this.#spec, inputWidth: W, inputHeight: H };
    const images: { frame: number; image: BgrImage; region: Region; mirrored: boolean }[] = [];
    frames.forEach((image, frame) => {
      for (const region of plan.tiles) {
        images.push({ frame, image, region, mirrored: false });
        if (this.#passes() === 2) images.push({ frame, image, region, mirrored: true });
      }
    });
    const batches: PreparedBatch[] = [];
    for (let start = 0; start < images.length; start += this.info.batchSize) {
      const chunk = images.slice(start, start + this.info.batchSize);
      const size = this.#fixedBatch() ? this.info.batchSize : chunk.length;
      const length = size * 3 * W * H;
      const pooled = this.#pool.findIndex((b) => b.length === length);
      const data = pooled >= 0 ? this.#pool.splice(pooled, 1)[0]! : new Float32Array(length);
      const items = chunk.map((item, i) => {
        const transform = letterboxInto(item.image, item.region, spec, data, i * 3 * W * H, plan.tileScale);
        if (item.mirrored) mirrorChw(data, i * 3 * W * H, W, H);
        return { frame: item.frame, transform, mirrored: item.mirrored };
      });
      batches.push({
        tensor: new ort.Tensor('float32', data, [size, 3, H, W]),
        frameCount: frames.length,
        items,
        plan,
        frames,
      });
    }
    return batches;
  }

  /**
   * Runs prepared batches (of the same frames) and returns each frame's
   * detections in source pixels, after class-wise NMS over all its tiles.
   *
   * @throws PolyvisionError `inference_failed` (retriable) when onnxruntime fails.
   */
  async infer(batches: readonly PreparedBatch[]): Promise<Detection[][]> {
    const first = batches[0];
    if (!first) return [];
    // Per pass (recorded, mirrored), per frame.
    const perPass: Candidate[][][] = Array.from({ length: this.#passes() }, () =>
      Array.from({ length: first.frameCount }, () => []),
    );
    const { plan } = first;
    const toSourceX = plan.sourceWidth / plan.decodeWidth;
    const toSourceY = plan.sourceHeight / plan.decodeHeight;
    const decodeOptions = {
      classIds: this.#classIds,
      scoreThreshold: this.options.scoreThreshold,
      personClassIds: this.#personClassIds,
      floors: this.#floors,
    };
    for (const batch of batches) {
      let output: ort.Tensor;
      try {
        const result = await this.#session.run({ [this.#inputName]: batch.tensor });
        output = result[this.#outputName]!;
      } catch (cause) {
        throw new PolyvisionError('inference_failed', `onnxruntime failed: ${String(cause)}`, {
          retriable: true,
          cause,
        });
      }
      if (this.#pool.length < 4) this.#pool.push(batch.tensor.data as Float32Array);
      const data = output.data as Float32Array;
      const perImage = data.length / output.dims[0]!;
      batch.items.forEach((item, i) => {
        const candidates =
          this.#resolved.layout === 'yolov8'
            ? decodeYolov8(data, i * perImage, output.dims[2]!, decodeOptions)
            : decodeYolox(data, i * perImage, this.info.inputWidth, this.info.inputHeight, this.#resolved.classCount, {
                ...decodeOptions,
                decoded: this.options.yoloxDecoded,
              });
        const t = item.transform;
        for (const candidate of candidates) {
          // A mirrored tile's box mirrored back across the input's width.
          const c = item.mirrored
            ? {
                ...candidate,
                box: [
                  plan.inputWidth - candidate.box[2],
                  candidate.box[1],
                  plan.inputWidth - candidate.box[0],
                  candidate.box[3],
                ] as BoxXyxy,
              }
            : candidate;
          const box: BoxXyxy = [
            clamp(((c.box[0] - t.padX) / t.scale + t.regionX) * toSourceX, 0, plan.sourceWidth),
            clamp(((c.box[1] - t.padY) / t.scale + t.regionY) * toSourceY, 0, plan.sourceHeight),
            clamp(((c.box[2] - t.padX) / t.scale + t.regionX) * toSourceX, 0, plan.sourceWidth),
            clamp(((c.box[3] - t.padY) / t.scale + t.regionY) * toSourceY, 0, plan.sourceHeight),
          ];
          if (box[2] - box[0] >= 1 && box[3] - box[1] >= 1)
            perPass[item.mirrored ? 1 : 0]![item.frame]!.push({ ...c, box });
        }
      });
    }
    const suppressed = perPass.map((perFrame) => perFrame.map((candidates) => this.#suppress(candidates)));
    const [recorded, mirrored] = suppressed as [Detection[][], Detection[][] | undefined];
    const found = mirrored ? recorded.map((d, frame) => fuseFlipPasses(d, mirrored[frame] ?? [])) : recorded;
    if (!this.#verifiers.length) return found;
    const source = { width: plan.sourceWidth, height: plan.sourceHeight };
    let verified = found;
    for (const { verifier, applies, minScore } of this.#verifiers) {
      verified = await verifier.rescore(first.frames, verified, source, applies, minScore);
    }
    // Boxes a verifier moved stay in the frame, and two that now cover one object are one again.
    const inFrame = (b: BoxXyxy): BoxXyxy => [
      clamp(b[0], 0, plan.sourceWidth),
      clamp(b[1], 0, plan.sourceHeight),
      clamp(b[2], 0, plan.sourceWidth),
      clamp(b[3], 0, plan.sourceHeight),
    ];
    return verified.map((list) =>
      this.#suppress(
        list.map((d) => ({ classId: this.#classIdOf.get(d.class)!, score: d.score, box: inFrame(d.box) })),
      ),
    );
  }

  /** Class-wise NMS of a frame's candidates (people in one group), as detections best first. */
  #suppress(candidates: Candidate[]): Detection[] {
    return classWiseNms(
      candidates,
      this.options.nmsIouThreshold,
      this.options.maxDetectionsPerFrame,
      // One person is one box whatever role the model leans to: people suppress each other.
      (classId) => (PERSON_CLASSES.has(this.options.classMap[classId] ?? '') ? 'person' : classId),
      this.options.nmsContainmentThreshold,
    ).map(
      (c): Detection => ({
        class: this.options.classMap[c.classId]!,
        score: Math.min(1, Math.max(0, c.score)),
        box: c.box,
      }),
    );
  }

  /** Runs the bare session on a tensor (for benchmarks: the baseline without pre/post-processing). */
  async runRaw(tensor: ort.Tensor): Promise<void> {
    await this.#session.run({ [this.#inputName]: tensor });
  }

  /** Whether the model's batch axis is fixed (its batch must be filled). */
  #fixedBatch(): boolean {
    const meta = this.#session.inputMetadata[0];
    return !!meta && meta.isTensor && typeof meta.shape[0] === 'number' && meta.shape[0] > 0;
  }

  /** Whether the class map has a person class (player, goalkeeper, referee), so a first pass can measure people. */
  detectsPeople(): boolean {
    return detectsClasses(this.options, 'person');
  }

  /** Releases the onnxruntime sessions. */
  async close(): Promise<void> {
    await Promise.all(this.#verifiers.map(({ verifier }) => verifier.close()));
    await this.#session.release();
  }
}

/** Whether the class map names any of a verifier's classes (people, or the ball). */
function detectsClasses(options: CompiledDetectOptions, target: VerifierTarget): boolean {
  return Object.values(options.classMap).some((c) => VERIFIER_CLASSES[target].has(c));
}

/** The `p`th percentile (nearest rank) of ascending `sorted`; 0 when empty. */
export function percentileOf(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Whether the session runs a blank input of `dims` (a symbolic-size model at a size other than its nominal one). */
async function runsAtSize(
  session: ort.InferenceSession,
  dims: number[],
  logger: Logger,
  otherwise: string,
): Promise<boolean> {
  try {
    const data = new Float32Array(dims.reduce((a, b) => a * b, 1));
    // Fatal only: a model that refuses the size is an expected answer here, logged below as a warning.
    await session.run({ [session.inputNames[0]!]: new ort.Tensor('float32', data, dims) }, { logSeverityLevel: 4 });
    return true;
  } catch (cause) {
    logger.warn(
      { dims, error: String(cause) },
      `model input is symbolic but the model does not run at ${dims.slice(2).join('×')}: ${otherwise}`,
    );
    return false;
  }
}

/** Whether a tensor dimension is a fixed size (not symbolic or unknown). */
function isFixed(d: number | string | undefined): d is number {
  return typeof d === 'number' && d > 0;
}

function clamp(v: number, lo: number, hi: number): number {
  return v < lo ? lo : Math.min(v, hi);
}
