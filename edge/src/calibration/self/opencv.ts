/**
 * OpenCV compiled to WebAssembly (`@techstark/opencv-js`, the OpenCV 4.12
 * JavaScript build): feature detection, description and matching for the
 * self-calibration. Loaded once per process, on first use (about 2 s).
 */
import { createRequire } from 'node:module';

/** The OpenCV module object (its typings are loose: the wasm API is used through a few calls). */
// biome-ignore lint/suspicious/noExplicitAny: opencv.js exposes an untyped Emscripten module.
export type OpenCv = any;

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
    const cv = require('@techstark/opencv-js') as OpenCv;
    if (!cv.Mat) await new Promise<void>((resolve) => (cv.onRuntimeInitialized = () => resolve()));
    return { cv };
  })();
  return loading;
}
