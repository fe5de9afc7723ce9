import { dirname, join } from 'node:path';
import type { Logger } from '@polyvision/shared';
import { PolyvisionError } from '@polyvision/shared';
import * as ort from 'onnxruntime-node';
import type { Detection } from '../detections-format.ts';
import type { BoxXyxy } from '../geometry.ts';
import type { BgrImage } from '../letterbox.ts';
import type { ModelVerifier } from '../model/model-card.ts';
import { type ExecutionProvider, openSession } from '../model/open-session.ts';
import { sha256OfFile } from '../model/resolve-model.ts';
import { sampleWindow, verifierWindow } from './window.ts';

/** The name of a verifier's score output: its first that is not `box_delta`. */
function scoreOutput(session: ort.InferenceSession): string {
  return session.outputNames.find((name) => name !== 'box_delta') ?? session.outputNames[0]!;
}

/** Windows per onnxruntime call (8 MB of input at 32 × 64). */
const MAX_WINDOWS_PER_RUN = 512;

/**
 * `box` moved by R-CNN box deltas `[dx, dy, dw, dh]` (Girshick et al. 2014, appendix C): its centre by
 * `dx` box widths and `dy` box heights, its width and height scaled by `e^dw` and `e^dh`.
 */
export function refineBox(box: BoxXyxy, delta: ArrayLike<number>): BoxXyxy {
  const w = box[2] - box[0];
  const h = box[3] - box[1];
  const cx = (box[0] + box[2]) / 2 + delta[0]! * w;
  const cy = (box[1] + box[3]) / 2 + delta[1]! * h;
  const nw = w * Math.exp(delta[2]!);
  const nh = h * Math.exp(delta[3]!);
  return [cx - nw / 2, cy - nh / 2, cx + nw / 2, cy + nh / 2];
}

/**
 * The fused score of a box: `detector^(1 − weight) · verifier^weight` (a weighted geometric mean: a box
 * both models believe keeps a high score, one either doubts falls). Inputs in [0, 1].
 */
export function fusedScore(detectorScore: number, verifierProbability: number, weight: number): number {
  return detectorScore ** (1 - weight) * verifierProbability ** weight;
}

/** The classes a verifier looks at: people (player, goalkeeper, referee) or the ball. */
export type VerifierTarget = 'person' | 'ball';

/**
 * A verifier (core/models/player-detector/train/verifier.py): a small classifier that looks again at
 * each person (or ball) box the detector found, through a window of its own around the box in the frame
 * the detector saw, rescores it (`fusedScore`) and moves it (`refineBox`). On the real validation matches
 * the person verifier lifts the people recall at precision 0.95 from 0.79 to 0.946, the ball verifier the
 * ball's (centres ≤ 4 px) at precision 0.6 from 0.52 to 0.62 (MODEL_CARD.md, bench/README.md § The person
 * verifier, § The ball verifier). A verifier file may hold several networks averaged in its graph
 * (train/verifier.py --combine); the stage sees one model. Open with
 * {@link Verifier.open}, reuse for many frames, then `close()`.
 */
export class Verifier {
  readonly target: VerifierTarget;
  readonly card: ModelVerifier;
  readonly #session: ort.InferenceSession;
  readonly #input: string;
  /** Whether the verifier also moves each box (its `box_delta` output). */
  readonly #regresses: boolean;

  private constructor(session: ort.InferenceSession, target: VerifierTarget, card: ModelVerifier) {
    this.#session = session;
    this.target = target;
    this.card = card;
    this.#input = session.inputNames[0]!;
    this.#regresses = session.outputNames.includes('box_delta');
  }

  /**
   * Opens the card's `target` verifier beside `modelPath`, after checking that it was trained on this
   * detector (`detectorSha256`: the float model's sha256) and that its file has the card's sha256. Its
   * score is its first output that is not `box_delta` (`person` or `ball`, [N, 1]).
   *
   * @throws PolyvisionError `model_invalid` (not retriable) when the verifier is another model's
   *   (stale card), unreadable, altered, or does not run on a window — with the fix (re-run
   *   train/verifier.py, or `DETECT_VERIFIER=off`).
   */
  static async open(
    modelPath: string,
    floatModelSha256: string,
    target: VerifierTarget,
    card: ModelVerifier,
    options: { executionProvider: ExecutionProvider | 'auto'; intraOpNumThreads?: number; logger?: Logger },
  ): Promise<Verifier> {
    const path = join(dirname(modelPath), card.file);
    const refuse = (why: string): never => {
      throw new PolyvisionError(
        'model_invalid',
        `${target} verifier ${path}: ${why} (re-run core/models/player-detector/train/verifier.py, or set DETECT_VERIFIER=off)`,
      );
    };
    if (card.detectorSha256 !== floatModelSha256) refuse('the model card says it was trained for another detector');
    const sha256 = await sha256OfFile(path).catch(() => null);
    if (sha256 === null) refuse('cannot be read');
    if (sha256 !== card.sha256) refuse('does not have the sha256 its model card gives');
    const { session } = await openSession(path, options.executionProvider, {
      ...(options.logger ? { logger: options.logger } : {}),
      ...(options.intraOpNumThreads ? { intraOpNumThreads: options.intraOpNumThreads } : {}),
    });
    const { widthPx: w, heightPx: h } = card.window;
    let out: ort.InferenceSession.ReturnType;
    try {
      const probe = new ort.Tensor('float32', new Float32Array(3 * w * h), [1, 3, h, w]);
      out = await session.run({ [session.inputNames[0]!]: probe });
    } catch (cause) {
      await session.release();
      return refuse(`does not run on a ${w}×${h} window: ${String(cause)}`);
    }
    const score = out[scoreOutput(session)]?.data.length;
    const delta = out.box_delta?.data.length;
    if (score !== 1 || (delta !== undefined && delta !== 4)) {
      await session.release();
      refuse(`answers ${score ?? 'no'} score and ${delta ?? 'no'} box values for one window (want 1 and 4 or none)`);
    }
    return new Verifier(session, target, card);
  }

  /**
   * Rescores the boxes of each frame that this verifier looks at (`applies`: people, or the ball): each
   * box's window sampled from `frames[i]` (the frame the detector saw, decoded at `frame.width /
   * sourceWidth` of the source size; boxes are in source pixels), one onnxruntime call for a batch's
   * windows, scores fused, and — when the verifier regresses boxes (`box_delta`) — each box moved by its
   * deltas ({@link refineBox}; the caller suppresses duplicates again). Boxes whose fused score falls
   * under `minScore` are dropped; other classes pass unchanged. Each frame's list comes back best first.
   *
   * @throws PolyvisionError `inference_failed` (retriable) when onnxruntime fails.
   */
  async rescore(
    frames: readonly BgrImage[],
    detections: readonly Detection[][],
    source: { width: number; height: number },
    applies: (d: Detection) => boolean,
    minScore: number,
  ): Promise<Detection[][]> {
    const { window: spec, weight } = this.card;
    const size = 3 * spec.widthPx * spec.heightPx;
    const boxes: { frame: number; index: number }[] = [];
    detections.forEach((list, frame) => {
      list.forEach((d, index) => {
        if (applies(d) && frames[frame]) boxes.push({ frame, index });
      });
    });
    const probability = new Float32Array(boxes.length);
    const deltas = new Float32Array(4 * boxes.length);
    for (let start = 0; start < boxes.length; start += MAX_WINDOWS_PER_RUN) {
      const chunk = boxes.slice(start, start + MAX_WINDOWS_PER_RUN);
      const data = new Float32Array(chunk.length * size);
      chunk.forEach(({ frame, index }, k) => {
        const image = frames[frame]!;
        const sx = image.width / source.width;
        const sy = image.height / source.height;
        const b = detections[frame]![index]!.box;
        sampleWindow(image, verifierWindow([b[0] * sx, b[1] * sy, b[2] * sx, b[3] * sy], spec), spec, data, k * size);
      });
      const out = await this.#run(data, chunk.length);
      probability.set(out.score, start);
      if (out.boxDelta) deltas.set(out.boxDelta, 4 * start);
    }
    const rescored = detections.map((list) => [...list]);
    boxes.forEach(({ frame, index }, k) => {
      const d = detections[frame]![index]!;
      rescored[frame]![index] = {
        ...d,
        score: fusedScore(d.score, probability[k]!, weight),
        ...(this.#regresses ? { box: refineBox(d.box, deltas.subarray(4 * k, 4 * k + 4)) } : {}),
      };
    });
    return rescored.map((list) =>
      list.filter((d) => !applies(d) || d.score >= minScore).sort((a, b) => b.score - a.score),
    );
  }

  async #run(data: Float32Array, count: number): Promise<{ score: Float32Array; boxDelta: Float32Array | null }> {
    const { widthPx: w, heightPx: h } = this.card.window;
    try {
      const out = await this.#session.run({ [this.#input]: new ort.Tensor('float32', data, [count, 3, h, w]) });
      return {
        score: out[scoreOutput(this.#session)]!.data as Float32Array,
        boxDelta: this.#regresses ? (out.box_delta!.data as Float32Array) : null,
      };
    } catch (cause) {
      throw new PolyvisionError(
        'inference_failed',
        `onnxruntime failed in the ${this.target} verifier: ${String(cause)}`,
        {
          retriable: true,
          cause,
        },
      );
    }
  }

  /** Releases the onnxruntime session. */
  async close(): Promise<void> {
    await this.#session.release();
  }
}
