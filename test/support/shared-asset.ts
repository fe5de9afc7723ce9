/**
 * Reference data from `../shared/` beside the repository (real footage, a
 * pretrained detector, a labelled dataset: what CI hosts keep next to the
 * checkout; nothing of it is committed). A plain clone has none of it, so a
 * test that needs a file asks `sharedAsset()` and skips when it is absent:
 *
 * ```ts
 * const model = sharedAsset('models/yolox_nano.onnx');
 * describe.skipIf(!model)('detector on real weights', () => { … model! … });
 * ```
 *
 * The folder is `POLYVISION_SHARED_DIR` when set, else `../shared` from the
 * repository root.
 */
import { existsSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Where each kind of reference file comes from (see the README in each folder of ../shared). */
const ORIGINS: ReadonlyArray<readonly [prefix: string, origin: string]> = [
  [
    'models/yolox_nano.onnx',
    'YOLOX-Nano COCO detector from github.com/Kazuhito00/YOLOX-ONNX-TFLite-Sample model/yolox_nano.onnx, Apache-2.0',
  ],
  ['footage/walking.mp4', 'github.com/roboflow/supervision docs/tracker/walking.mp4, MIT'],
  ['footage/tsukuba', 'github.com/AtomScott/SportsLabKit data/raw/{left,right}_camera.mp4, MIT'],
  ['datasets/football-players-detection', 'Roboflow Universe football-players-detection, CC BY 4.0'],
];

/** The folder that holds the reference data (it may not exist). */
export function sharedRoot(): string {
  return resolve(process.env.POLYVISION_SHARED_DIR || resolve(repoRoot, '..', 'shared'));
}

const reported = new Set<string>();

/**
 * The absolute path of a reference file or folder under `../shared/`, or
 * `null` when it is absent; then it prints one line (once per test file)
 * naming the missing path and where it comes from, for `describe.skipIf`.
 *
 * @param relativePath - path under the shared folder, e.g. `footage/walking.mp4`.
 */
export function sharedAsset(relativePath: string): string | null {
  const path = resolve(sharedRoot(), relativePath);
  if (existsSync(path)) return path;
  if (!reported.has(relativePath)) {
    reported.add(relativePath);
    const origin = ORIGINS.find(([prefix]) => relativePath.startsWith(prefix))?.[1] ?? 'see ../shared/README';
    const shown = relative(process.cwd(), path) || path;
    console.warn(
      `[skip] ${shown} is missing (reference data kept beside the repository; source: ${origin}): tests that need it are skipped`,
    );
  }
  return null;
}
