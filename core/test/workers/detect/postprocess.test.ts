import { describe, expect, it } from 'vitest';
import {
  type BgrImage,
  chooseTileGrid,
  classWiseNms,
  decodeYolov8,
  decodeYolox,
  gridAnchorCount,
  intersectionOverSmaller,
  iou,
  letterboxInto,
  nativeScaleGrid,
  parseTilingSetting,
  planTiles,
  type Region,
  resolveLayout,
} from '../../../src/workers/detect/index.ts';

describe('geometry and NMS', () => {
  it('computes IoU of overlapping, nested and disjoint boxes', () => {
    expect(iou([0, 0, 10, 10], [5, 0, 15, 10])).toBeCloseTo(50 / 150);
    expect(iou([0, 0, 10, 10], [0, 0, 10, 10])).toBe(1);
    expect(iou([0, 0, 10, 10], [2, 2, 4, 4])).toBeCloseTo(4 / 100);
    expect(iou([0, 0, 10, 10], [10, 0, 20, 10])).toBe(0);
  });

  it('suppresses overlapping boxes of the same class only, best first', () => {
    const kept = classWiseNms(
      [
        { box: [0, 0, 10, 10], score: 0.5, classId: 0 },
        { box: [1, 0, 11, 10], score: 0.9, classId: 0 },
        { box: [1, 0, 11, 10], score: 0.4, classId: 32 },
        { box: [50, 50, 60, 60], score: 0.3, classId: 0 },
      ],
      0.45,
    );
    expect(kept.map((k) => [k.classId, k.score])).toEqual([
      [0, 0.9],
      [32, 0.4],
      [0, 0.3],
    ]);
  });

  it('suppresses across the classes of one NMS group: one person is one box whatever role the model leans to', () => {
    const candidates = [
      { box: [0, 0, 10, 20] as const, score: 0.6, classId: 0 }, // player
      { box: [1, 0, 11, 20] as const, score: 0.5, classId: 2 }, // referee, the same person
      { box: [1, 0, 11, 20] as const, score: 0.4, classId: 3 }, // ball: its own group
    ].map((c) => ({ ...c, box: [...c.box] as [number, number, number, number] }));
    const people = (classId: number) => (classId <= 2 ? 'person' : classId);
    expect(classWiseNms(candidates, 0.45, 100, people).map((k) => k.classId)).toEqual([0, 3]);
    expect(classWiseNms(candidates, 0.45).map((k) => k.classId)).toEqual([0, 2, 3]);
  });

  it('drops a second box inside a better one of its group (the legs of a player), however low their IoU', () => {
    const person: [number, number, number, number] = [100, 100, 130, 180];
    const legs: [number, number, number, number] = [102, 140, 128, 180]; // the lower half: IoU 0.43
    const neighbour: [number, number, number, number] = [120, 95, 150, 175]; // another player, a third behind
    expect(iou(person, legs)).toBeLessThan(0.45);
    expect(intersectionOverSmaller(person, legs)).toBe(1);
    expect(intersectionOverSmaller(person, neighbour)).toBeLessThan(0.5);
    const candidates = [
      { box: person, score: 0.9, classId: 0 },
      { box: legs, score: 0.7, classId: 0 },
      { box: neighbour, score: 0.8, classId: 0 },
      { box: [110, 150, 116, 156] as [number, number, number, number], score: 0.5, classId: 3 }, // the ball at his feet
    ];
    const people = (classId: number) => (classId <= 2 ? 'person' : classId);
    expect(classWiseNms(candidates, 0.45, 100, people, 0.8).map((k) => k.box)).toEqual([
      person,
      neighbour,
      [110, 150, 116, 156],
    ]);
    // Off (1): IoU alone keeps the legs as a second person.
    expect(classWiseNms(candidates, 0.45, 100, people, 1)).toHaveLength(4);
  });
});

describe('letterbox', () => {
  const spec = { inputWidth: 8, inputHeight: 8, channelOrder: 'bgr' as const, valueScale: 1, padValue: 114 };

  it('copies pixels top-left and pads the rest (YOLOX)', () => {
    const image = { width: 4, height: 2, data: new Uint8Array(4 * 2 * 3) };
    for (let i = 0; i < image.data.length; i += 3) image.data.set([10, 20, 30], i); // B G R
    const out = new Float32Array(3 * 64);
    // scale min(8/4, 8/2) = 2 → 8×4 resized, top-left
    const t = letterboxInto(image, { x: 0, y: 0, width: 4, height: 2 }, { ...spec, placement: 'top-left' }, out, 0);
    expect(t).toMatchObject({ scale: 2, padX: 0, padY: 0 });
    expect(out[0]).toBe(10); // B plane, (0,0)
    expect(out[64 + 7]).toBe(20); // G plane, (7,0)
    expect(out[128 + 3 * 8 + 7]).toBe(30); // R plane, (7,3)
    expect(out[4 * 8]).toBe(114); // row 4 is padding
  });

  it('centres, swaps to RGB and scales values (Ultralytics)', () => {
    const image = { width: 8, height: 4, data: new Uint8Array(8 * 4 * 3).fill(0) };
    image.data[0] = 255; // B of (0,0)
    const out = new Float32Array(3 * 64);
    const t = letterboxInto(
      image,
      { x: 0, y: 0, width: 8, height: 4 },
      { ...spec, channelOrder: 'rgb', valueScale: 1 / 255, placement: 'center' },
      out,
      0,
    );
    expect(t).toMatchObject({ scale: 1, padX: 0, padY: 2 });
    expect(out[128 + 2 * 8]).toBeCloseTo(1); // B lands in the third (blue) plane, row 2
    expect(out[0]).toBeCloseTo(114 / 255); // row 0 is padding
  });

  it('resizes a tile region bilinearly and reports the mapping back', () => {
    const image = { width: 16, height: 16, data: new Uint8Array(16 * 16 * 3) };
    for (let y = 0; y < 16; y++) for (let x = 0; x < 16; x++) image.data[(y * 16 + x) * 3] = x * 10;
    const out = new Float32Array(3 * 4 * 4);
    const t = letterboxInto(
      image,
      { x: 8, y: 8, width: 8, height: 8 },
      { ...spec, inputWidth: 4, inputHeight: 4, placement: 'top-left' },
      out,
      0,
    );
    expect(t).toMatchObject({ scale: 0.5, regionX: 8, regionY: 8 });
    // output x=0 samples source x = 8 + 0.5 → between 80 and 90
    expect(out[0]).toBeCloseTo(85);
  });

  it('computes the same bilinear resize as a 2×2 blend per pixel, up and down, on any region', () => {
    // The reference: OpenCV INTER_LINEAR's formula, one output pixel at a time.
    const reference = (image: BgrImage, region: Region, rw: number, rh: number, c: number, x: number, y: number) => {
      const clamp = (v: number, hi: number) => Math.min(Math.max(v, 0), hi);
      const fx = clamp((x + 0.5) * (region.width / rw) - 0.5, region.width - 1);
      const fy = clamp((y + 0.5) * (region.height / rh) - 0.5, region.height - 1);
      const [x0, y0] = [Math.floor(fx), Math.floor(fy)];
      const [x1, y1] = [Math.min(x0 + 1, region.width - 1), Math.min(y0 + 1, region.height - 1)];
      const at = (px: number, py: number) => image.data[((region.y + py) * image.width + region.x + px) * 3 + c]!;
      const [wx, wy] = [fx - x0, fy - y0];
      return (
        at(x0, y0) * (1 - wx) * (1 - wy) +
        at(x1, y0) * wx * (1 - wy) +
        at(x0, y1) * (1 - wx) * wy +
        at(x1, y1) * wx * wy
      );
    };
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const image = { width: 53, height: 37, data: new Uint8Array(53 * 37 * 3) };
    for (let i = 0; i < image.data.length; i++) image.data[i] = Math.floor(random() * 256);
    const cases: [Region, number, number][] = [
      [{ x: 5, y: 3, width: 20, height: 9 }, 48, 32], // up 2.4×, like the demo's tiles
      [{ x: 0, y: 0, width: 53, height: 37 }, 24, 24], // down
      [{ x: 30, y: 20, width: 23, height: 17 }, 64, 16], // up, wide input, letterboxed
    ];
    for (const [region, W, H] of cases) {
      const cellSpec = { ...spec, inputWidth: W, inputHeight: H, placement: 'center' as const };
      const out = new Float32Array(3 * W * H);
      const t = letterboxInto(image, region, cellSpec, out, 0);
      const rw = Math.round(region.width * t.scale);
      const rh = Math.round(region.height * t.scale);
      let worst = 0;
      let padding = 0;
      for (let c = 0; c < 3; c++)
        for (let y = 0; y < H; y++)
          for (let x = 0; x < W; x++) {
            const got = out[c * W * H + y * W + x]!;
            const [px, py] = [x - t.padX, y - t.padY];
            if (px < 0 || py < 0 || px >= rw || py >= rh) padding += got === 114 ? 0 : 1;
            else worst = Math.max(worst, Math.abs(got - reference(image, region, rw, rh, c, px, py)));
          }
      expect(worst, JSON.stringify(region)).toBeLessThan(1e-3);
      expect(padding, `${JSON.stringify(region)}: pixels around the picture that are not the pad value`).toBe(0);
    }
  });
});

describe('tiling', () => {
  it('covers a wide panorama with overlapping tiles', () => {
    const tiles = planTiles(4000, 1000, { columns: 3, rows: 1, overlapFraction: 0.2 });
    expect(tiles.length).toBe(3);
    expect(tiles[0]!.x).toBe(0);
    expect(tiles.at(-1)!.x + tiles.at(-1)!.width).toBeGreaterThanOrEqual(3999);
    const overlap = tiles[0]!.x + tiles[0]!.width - tiles[1]!.x;
    expect(overlap / tiles[0]!.width).toBeCloseTo(0.2, 1);
  });

  it('keeps a 1×1 grid whole and refuses a bad grid', () => {
    expect(planTiles(1280, 720, { columns: 1, rows: 1, overlapFraction: 0.1 })).toEqual([
      { x: 0, y: 0, width: 1280, height: 720 },
    ]);
    expect(() => planTiles(100, 100, { columns: 0, rows: 1, overlapFraction: 0 })).toThrow(/tile grid/);
  });

  it('parses the tiling settings of the demo and the worker', () => {
    expect(parseTilingSetting('auto')).toEqual({ mode: 'auto' });
    expect(parseTilingSetting('off')).toEqual({ mode: 'off' });
    expect(parseTilingSetting('2x1')).toEqual({ mode: 'grid', columns: 2, rows: 1 });
    expect(parseTilingSetting('60px')).toEqual({ mode: 'auto', personHeightPx: 60 });
    expect(() => parseTilingSetting('wide')).toThrow(/auto, off, a grid like 2x1/);
    expect(() => parseTilingSetting('0x1')).toThrow(/tiling/);
  });
});

describe('layouts and decoders', () => {
  it('recognises YOLOv8 and YOLOX shapes and refuses others', () => {
    expect(gridAnchorCount(640, 640)).toBe(8400);
    expect(gridAnchorCount(416, 416)).toBe(3549);
    expect(resolveLayout([1, 84, 8400], 'auto', 640, 640)).toEqual({
      layout: 'yolov8',
      anchorCount: 8400,
      classCount: 80,
    });
    expect(resolveLayout([1, 3549, 85], 'auto', 416, 416)).toMatchObject({ layout: 'yolox', classCount: 80 });
    expect(() => resolveLayout([1, 3549, 85], 'yolov8', 416, 416)).toThrow(
      expect.objectContaining({ code: 'model_layout_unsupported', retriable: false }),
    );
    expect(() => resolveLayout([1, 3, 416, 416], 'auto', 416, 416)).toThrow(/not three-dimensional/);
    // A single-scale YOLOv8-style head (boxes decoded in the graph): 90 × 160 stride-8 cells.
    expect(resolveLayout([1, 8, 14400], 'auto', 1280, 720)).toMatchObject({ layout: 'yolov8', classCount: 4 });
    expect(() => resolveLayout([1, 3000, 85], 'auto', 416, 416)).toThrow(/matches no known layout/);
  });

  it('decodes a YOLOv8 anchor with the best mapped class', () => {
    const N = 84; // 64×64 input
    const data = new Float32Array(6 * N);
    const n = 10;
    data.set([32], 0 * N + n);
    data[1 * N + n] = 20;
    data[2 * N + n] = 10;
    data[3 * N + n] = 8;
    data[4 * N + n] = 0.3; // class 0
    data[5 * N + n] = 0.8; // class 1
    const out = decodeYolov8(data, 0, N, { classIds: [0, 1], scoreThreshold: 0.25 });
    expect(out).toEqual([{ box: [27, 16, 37, 24], score: expect.closeTo(0.8, 5), classId: 1 }]);
    expect(decodeYolov8(data, 0, N, { classIds: [0], scoreThreshold: 0.25 })[0]!.classId).toBe(0);
  });

  it('grid-decodes YOLOX rows (stride 16 anchor)', () => {
    const C = 2;
    const row = 5 + C;
    const data = new Float32Array(84 * row); // 64×64: 64 + 16 + 4 anchors
    // anchor index 64 + (gy=1)*4 + (gx=2) is stride 16, grid (2, 1)
    const n = 64 + 4 + 2;
    data.set([0.5, 0.25, Math.log(2), 0, 0.9, 0.1, 0.5], n * row);
    const out = decodeYolox(data, 0, 64, 64, C, { classIds: [0, 1], scoreThreshold: 0.3 });
    // cx = (0.5+2)·16 = 40, cy = (0.25+1)·16 = 20, w = 2·16 = 32, h = 1·16 = 16; score 0.9·0.5
    expect(out).toHaveLength(1);
    expect(out[0]!.classId).toBe(1);
    expect(out[0]!.score).toBeCloseTo(0.45, 5);
    for (const [i, v] of [24, 12, 56, 28].entries()) expect(out[0]!.box[i]).toBeCloseTo(v, 4);
  });
});

describe('automatic tiling from object scale', () => {
  const model = { inputWidth: 1280, inputHeight: 720, overlapFraction: 0.15, maxTiles: 16, maxUpscale: 2 };
  it('brings people to the model’s training scale, for any aspect ratio', () => {
    // Real 1920×1080 broadcast frames, people ~54 px, model people from 20 px: s = 0.37 < 0.67 → whole frame.
    const real = { ...model, frameWidth: 1920, frameHeight: 1080 };
    expect(chooseTileGrid(real, 54, 20)).toMatchObject({ columns: 1, rows: 1 });
    // The synthetic 1280×720 cameras, people ~25 px: s = 0.8 → whole frame.
    expect(chooseTileGrid({ ...model, frameWidth: 1280, frameHeight: 720 }, 25, 20)).toMatchObject({ columns: 1 });
    // A far fixed camera at 1080p, people ~12 px: s = 1.67 → tiles ≤ 768×432 → 3×3.
    const far = chooseTileGrid(real, 12, 20);
    expect(far).toMatchObject({ columns: 3, rows: 3 });
    expect(far.scale * 12).toBeGreaterThanOrEqual(20);
    // The demo's 2880×392 panorama, people ~24 px: 3 tiles across, one row.
    const pano = { ...model, frameWidth: 2880, frameHeight: 392 };
    expect(chooseTileGrid(pano, 24, 20)).toMatchObject({ columns: 3, rows: 1 });
    // A tall 720×2000 frame is cut in rows, not columns.
    expect(chooseTileGrid({ ...model, frameWidth: 720, frameHeight: 2000 }, 20, 28)).toMatchObject({
      columns: 1,
      rows: 5,
    });
  });

  it('caps magnification and tile count, and has a native-scale grid for the first pass', () => {
    const real = { ...model, frameWidth: 1920, frameHeight: 1080 };
    // People of 4 px would need 7×; capped at maxUpscale 2 then at 16 tiles.
    const tiny = chooseTileGrid(real, 4, 28);
    expect(tiny.columns * tiny.rows).toBeLessThanOrEqual(16);
    expect(tiny.columns * tiny.rows).toBeGreaterThan(9);
    expect(nativeScaleGrid(real)).toMatchObject({ columns: 2, rows: 2 });
    expect(nativeScaleGrid({ ...model, frameWidth: 2880, frameHeight: 392 })).toMatchObject({ columns: 3, rows: 1 });
    expect(nativeScaleGrid({ ...model, frameWidth: 848, frameHeight: 478 })).toMatchObject({ columns: 1, rows: 1 });
    expect(() => chooseTileGrid(real, 0, 28)).toThrow(/positive/);
  });
});
