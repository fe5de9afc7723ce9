/**
 * Feature correspondences between two cameras with OpenCV (ORB: oriented FAST
 * corners + rotated BRIEF descriptors, Rublee et al., ICCV 2011), brute-force
 * Hamming matching with Lowe's ratio test (Lowe, IJCV 2004, §7.1) and a
 * mutual-best check. The geometry (which matches are right) is decided later by RANSAC.
 */
import { loadOpenCv } from '@polyvision/shared';

/** A grey image, row-major, 8-bit. */
export interface GrayImage {
  widthPx: number;
  heightPx: number;
  data: Uint8Array;
}

/** A matched pair: pixel in camera A, pixel in camera B (distorted, as recorded). */
export interface FeatureMatch {
  a: [number, number];
  b: [number, number];
  /** Hamming distance of the descriptors (bits). */
  distance: number;
}

/** Options of {@link matchFeatures}. */
export interface MatchOptions {
  /** ORB features per image. @defaultValue 12000 */
  maxFeatures?: number;
  /** Lowe ratio: best distance / second best below this. @defaultValue 0.8 */
  ratio?: number;
  /** Where features may be detected in A and B (255 = yes, same size as the image); everywhere when absent. */
  masks?: [Uint8Array | null, Uint8Array | null];
}

/**
 * Detects ORB features in both images and returns the mutual best matches that pass the ratio test.
 * @returns matches plus the feature counts found in each image.
 */
export async function matchFeatures(
  a: GrayImage,
  b: GrayImage,
  options: MatchOptions = {},
): Promise<{ matches: FeatureMatch[]; featuresA: number; featuresB: number }> {
  const { cv } = await loadOpenCv();
  const ratio = options.ratio ?? 0.8;
  const orb = new cv.ORB(options.maxFeatures ?? 12_000, 1.2, 8, 31, 0, 2, cv.ORB_HARRIS_SCORE, 31, 10);
  const matsToFree: Array<{ delete(): void }> = [orb];
  const detect = (img: GrayImage, maskData: Uint8Array | null | undefined) => {
    const mat = cv.matFromArray(img.heightPx, img.widthPx, cv.CV_8UC1, img.data);
    const keypoints = new cv.KeyPointVector();
    const descriptors = new cv.Mat();
    const mask = maskData ? cv.matFromArray(img.heightPx, img.widthPx, cv.CV_8UC1, maskData) : new cv.Mat();
    orb.detectAndCompute(mat, mask, keypoints, descriptors);
    matsToFree.push(mat, keypoints, descriptors, mask);
    const points: Array<[number, number]> = [];
    for (let i = 0; i < keypoints.size(); i++) {
      const kp = keypoints.get(i);
      points.push([kp.pt.x, kp.pt.y]);
    }
    return { points, descriptors };
  };
  try {
    const fa = detect(a, options.masks?.[0]);
    const fb = detect(b, options.masks?.[1]);
    if (fa.points.length < 2 || fb.points.length < 2) {
      return { matches: [], featuresA: fa.points.length, featuresB: fb.points.length };
    }
    const matcher = new cv.BFMatcher(cv.NORM_HAMMING, false);
    matsToFree.push(matcher);
    const knn = (q: { descriptors: unknown }, t: { descriptors: unknown }) => {
      const out = new cv.DMatchVectorVector();
      matcher.knnMatch(q.descriptors, t.descriptors, out, 2);
      const best = new Map<number, { train: number; distance: number }>();
      for (let i = 0; i < out.size(); i++) {
        const pair = out.get(i);
        if (pair.size() < 2) continue;
        const m0 = pair.get(0);
        const m1 = pair.get(1);
        if (m0.distance < ratio * m1.distance) best.set(m0.queryIdx, { train: m0.trainIdx, distance: m0.distance });
      }
      out.delete();
      return best;
    };
    const ab = knn(fa, fb);
    const ba = knn(fb, fa);
    const matches: FeatureMatch[] = [];
    for (const [ia, m] of ab) {
      if (ba.get(m.train)?.train !== ia) continue;
      matches.push({
        a: fa.points[ia] as [number, number],
        b: fb.points[m.train] as [number, number],
        distance: m.distance,
      });
    }
    return { matches, featuresA: fa.points.length, featuresB: fb.points.length };
  } finally {
    for (const m of matsToFree) m.delete();
  }
}
