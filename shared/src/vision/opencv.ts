/**
 * OpenCV compiled to WebAssembly (`@techstark/opencv-js`, the OpenCV 4.12
 * JavaScript build): feature detection, description and matching for the
 * edge's self-calibration, sparse optical flow for the detect stage's camera
 * motion. Loaded once per process, on first use (0.3–2 s).
 */
import type { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';

/** The OpenCV module object (its typings are loose: the wasm API is used through a few calls). */
// biome-ignore lint/suspicious/noExplicitAny: opencv.js exposes an untyped Emscripten module.
export type OpenCv = any;

const PROCESS_EVENTS = ['uncaughtException', 'unhandledRejection'] as const;

// Held in a box: the Emscripten module has a `then` method, so resolving a promise with it would never settle.
let loading: Promise<{ cv: OpenCv }> | null = null;

/**
 * Loads OpenCV.js once and resolves when its runtime is initialised. The
 * module comes boxed (`{ cv }`): it is itself a thenable, so a promise of it never settles.
 * @throws the loader's error when the wasm module cannot start.
 */
export function loadOpenCv(): Promise<{ cv: OpenCv }> {
  loading ??= (async () => {
    const require = createRequire(import.meta.url);
    // The Emscripten runtime installs process-wide `uncaughtException` (rethrowing after printing its
    // 10 MB minified source as context) and `unhandledRejection` (abort) listeners: not its business
    // in a worker or the edge; Node's own handling stays.
    const emitter: EventEmitter = process;
    const before = new Map(PROCESS_EVENTS.map((event) => [event, new Set(emitter.listeners(event))]));
    const cv = require('@techstark/opencv-js') as OpenCv;
    for (const event of PROCESS_EVENTS) {
      for (const listener of emitter.listeners(event)) {
        if (!before.get(event)!.has(listener)) emitter.removeListener(event, listener as (...args: unknown[]) => void);
      }
    }
    if (!cv.Mat) await new Promise<void>((resolve) => (cv.onRuntimeInitialized = () => resolve()));
    return { cv };
  })();
  return loading;
}
