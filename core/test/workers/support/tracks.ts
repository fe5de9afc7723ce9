import type { BoxXyxy, DetectionsFile } from '../../../src/workers/detect/index.ts';
import type { Track, TracksFile } from '../../../src/workers/track/index.ts';

/** A detections header for tests: a `width × height` source of `frameCount` frames at `fps`, analysed at `analysisFps`. */
export function detectionsHeader(
  frameCount: number,
  fps = 25,
  width = 1920,
  height = 1080,
  analysisFps = fps,
): DetectionsFile['header'] {
  return {
    format: 'polyvision.detections',
    version: 1,
    source: { width, height, fps, frameCount, durationMs: (frameCount * 1000) / fps },
    analysisFps,
    model: {
      version: 'test',
      sha256: 'test',
      layout: 'yolov8',
      inputWidth: 640,
      inputHeight: 640,
      executionProvider: 'cpu',
      tiles: 1,
    },
    classes: ['player', 'ball'],
  };
}

/** A tracks file for tests: `frameCount` frames at `fps` over a `width × height` source. */
export function tracksFile(tracks: Track[], frameCount: number, fps = 25, width = 1920, height = 1080): TracksFile {
  return {
    format: 'polyvision.tracks',
    version: 1,
    detections: detectionsHeader(frameCount, fps, width, height),
    tracker: { name: 'bytetrack', options: {} },
    frameCount,
    tracks,
  };
}

/** A track whose box centre follows `centre(frame)`. */
export function movingTrack(
  id: number,
  cls: Track['class'],
  frameCount: number,
  centre: (frame: number) => [number, number],
  size: [number, number] = [20, 50],
): Track {
  return {
    id,
    class: cls,
    frames: Array.from({ length: frameCount }, (_, frame) => {
      const [x, y] = centre(frame);
      const box: BoxXyxy = [x - size[0] / 2, y - size[1] / 2, x + size[0] / 2, y + size[1] / 2];
      return { frame, tMs: frame * 40, box, score: 0.9 };
    }),
  };
}
