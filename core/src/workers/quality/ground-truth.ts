import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { PolyvisionError } from '@polyvision/shared';
import type { BoxXyxy } from '../detect/geometry.ts';

/** One labelled object of a frame. */
export interface LabelledBox {
  class: string;
  box: BoxXyxy;
  /** Object id (MOTChallenge ground truth); absent for YOLO labels. */
  id?: number;
}

/** Ground truth of a sequence of frames, keyed by 0-based source frame index. */
export interface GroundTruth {
  /** `yolo-dir` (one label file per frame, sorted by name) or `mot`. */
  kind: 'yolo-dir' | 'mot';
  frames: Map<number, LabelledBox[]>;
  /** Per source frame index, the label file name (YOLO) — to line images up. */
  names?: string[];
  /** Class names that occur in the ground truth or its class map. */
  classes: string[];
  /**
   * MOTChallenge rows with `consider` (column 7) = 0, per 0-based frame: regions not labelled
   * (spectators, the bench, outside the labelled area) — a prediction there is neither right nor wrong.
   */
  ignore?: Map<number, [number, number, number, number][]>;
}

/** A region of a frame: x1, y1, x2, y2 in source pixels. */
export type Region = readonly [number, number, number, number];

/**
 * Whether the centre of `box` (x1, y1, x2, y2, source pixels) lies in one of `regions`, edges included: how an
 * ignore region decides (MOTChallenge leaves out what falls in its ignore regions the same way).
 */
export function centreInRegions(box: readonly number[], regions: readonly Region[]): boolean {
  const cx = (box[0]! + box[2]!) / 2;
  const cy = (box[1]! + box[3]!) / 2;
  return regions.some((r) => cx >= r[0] && cx <= r[2] && cy >= r[1] && cy <= r[3]);
}

/** The football-players-detection dataset's class ids (`../shared/datasets/football-players-detection`). */
export const YOLO_FOOTBALL_CLASSES = '0:ball,1:goalkeeper,2:player,3:referee';
/** The synthetic generator's MOTChallenge class ids (`shared/src/synthetic`, gt/README.md). */
export const MOT_SYNTHETIC_CLASSES = '1:player,2:goalkeeper,3:referee,4:ball';

/**
 * Parses a class map `id:name,id:name`.
 * @throws PolyvisionError `class_map_invalid` naming the bad pair.
 */
export function parseClassMap(text: string): Map<number, string> {
  const map = new Map<number, string>();
  for (const pair of text.split(',')) {
    const m = /^\s*(\d+)\s*:\s*([A-Za-z][\w-]*)\s*$/.exec(pair);
    if (!m) throw new PolyvisionError('class_map_invalid', `class map pair ${JSON.stringify(pair)}: expected id:name`);
    map.set(Number(m[1]), m[2]!);
  }
  return map;
}

/**
 * Reads YOLO labels (`<name>.txt`: `class cx cy w h` per line, normalised to
 * the image size) from a directory; frame `i` is the `i`-th file by name.
 *
 * @param imageSize - pixels the normalised boxes are scaled to (the predictions' source size).
 * @throws PolyvisionError `ground_truth_invalid` naming the file and line.
 */
export async function readYoloLabels(
  dir: string,
  imageSize: { width: number; height: number },
  classMap: Map<number, string>,
): Promise<GroundTruth> {
  const names = (await readdir(dir)).filter((n) => n.endsWith('.txt')).sort();
  if (names.length === 0) throw new PolyvisionError('ground_truth_invalid', `${dir} holds no .txt label file`);
  const frames = new Map<number, LabelledBox[]>();
  for (const [index, name] of names.entries()) {
    const boxes: LabelledBox[] = [];
    const text = await readFile(join(dir, name), 'utf8');
    text.split(/\r?\n/).forEach((line, i) => {
      if (line.trim() === '') return;
      const v = line.trim().split(/\s+/).map(Number);
      if (v.length < 5 || v.slice(0, 5).some((x) => !Number.isFinite(x))) {
        throw new PolyvisionError('ground_truth_invalid', `${name}:${i + 1}: expected "class cx cy w h"`);
      }
      const cls = classMap.get(v[0]!);
      if (cls === undefined) return;
      const [cx, cy, w, h] = [
        v[1]! * imageSize.width,
        v[2]! * imageSize.height,
        v[3]! * imageSize.width,
        v[4]! * imageSize.height,
      ];
      boxes.push({ class: cls, box: [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2] });
    });
    frames.set(index, boxes);
  }
  return {
    kind: 'yolo-dir',
    frames,
    names: names.map((n) => basename(n, '.txt')),
    classes: [...new Set(classMap.values())],
  };
}

/**
 * Reads MOTChallenge ground truth (`frame,id,left,top,width,height,conf,class,visibility`,
 * 1-based frames); rows with `conf` (consider) 0 are ignore regions (`ignore`), rows with
 * `visibility` below `minVisibility` are left out, rows without a class column count as the
 * map's first class.
 *
 * @throws PolyvisionError `ground_truth_invalid` naming the line.
 */
export async function readMotGroundTruth(
  path: string,
  classMap: Map<number, string>,
  minVisibility = 0,
): Promise<GroundTruth> {
  const frames = new Map<number, LabelledBox[]>();
  const ignore = new Map<number, [number, number, number, number][]>();
  const text = await readFile(path, 'utf8');
  const firstClass = [...classMap.values()][0] ?? 'player';
  text.split(/\r?\n/).forEach((line, i) => {
    if (line.trim() === '') return;
    const v = line.split(',').map(Number);
    if (v.length < 6 || v.slice(0, 6).some((x) => !Number.isFinite(x))) {
      throw new PolyvisionError('ground_truth_invalid', `${path}:${i + 1}: expected frame,id,left,top,width,height,…`);
    }
    if (v.length >= 7 && v[6] === 0) {
      const [frame, , left, top, width, height] = v as [number, number, number, number, number, number];
      ignore.set(frame - 1, [...(ignore.get(frame - 1) ?? []), [left, top, left + width, top + height]]);
      return;
    }
    if (v.length >= 9 && v[8]! < minVisibility) return;
    const cls = v.length >= 8 ? classMap.get(v[7]!) : firstClass;
    if (cls === undefined) return;
    const [frame, id, left, top, width, height] = v as [number, number, number, number, number, number];
    const list = frames.get(frame - 1) ?? [];
    list.push({ class: cls, id, box: [left, top, left + width, top + height] });
    frames.set(frame - 1, list);
  });
  return { kind: 'mot', frames, classes: [...new Set(classMap.values())], ignore };
}

/**
 * Reads ground truth from a YOLO labels directory or a MOTChallenge text file.
 *
 * @throws PolyvisionError `ground_truth_invalid` when `path` is neither.
 */
export async function readGroundTruth(
  path: string,
  options: { imageSize: { width: number; height: number }; classMap?: string; minVisibility?: number },
): Promise<GroundTruth> {
  const info = await stat(path).catch(() => undefined);
  if (!info) throw new PolyvisionError('ground_truth_invalid', `${path} does not exist`);
  if (info.isDirectory()) {
    return readYoloLabels(path, options.imageSize, parseClassMap(options.classMap ?? YOLO_FOOTBALL_CLASSES));
  }
  return readMotGroundTruth(path, parseClassMap(options.classMap ?? MOT_SYNTHETIC_CLASSES), options.minVisibility);
}
