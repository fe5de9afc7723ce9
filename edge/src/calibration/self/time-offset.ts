/**
 * The time offset between two cameras from their footage: the motion energy
 * of each camera inside the area both see (mean absolute difference of
 * consecutive grey thumbnails over the overlap mask) is a signal driven by
 * the same players; the lag that maximises the normalised cross-correlation
 * of the two signals is the offset (a frame-difference variant of the
 * classic audio/visual synchronisation by correlation).
 */

/** Motion energy per frame step over `mask` (1 = counted): `e[t] = mean |I[t+1] − I[t]|`. */
export function motionEnergy(thumbnails: readonly Uint8Array[], mask: Uint8Array): Float64Array {
  const out = new Float64Array(Math.max(0, thumbnails.length - 1));
  let count = 0;
  for (let i = 0; i < mask.length; i++) count += mask[i] ? 1 : 0;
  if (count === 0) return out;
  for (let t = 0; t + 1 < thumbnails.length; t++) {
    const a = thumbnails[t] as Uint8Array;
    const b = thumbnails[t + 1] as Uint8Array;
    let s = 0;
    for (let i = 0; i < mask.length; i++) if (mask[i]) s += Math.abs((b[i] as number) - (a[i] as number));
    out[t] = s / count;
  }
  return out;
}

/** The estimated offset. */
export interface TimeOffset {
  /** Frames by which camera B lags camera A (B shows at frame t + lag what A shows at t); may be negative. */
  lagFrames: number;
  /** Normalised cross-correlation at that lag (−1…1). */
  correlation: number;
  /** Correlation at lag 0, for comparison. */
  correlationAtZero: number;
}

function normalise(x: Float64Array): Float64Array {
  let mean = 0;
  for (const v of x) mean += v / x.length;
  let sd = 0;
  for (const v of x) sd += ((v - mean) * (v - mean)) / x.length;
  sd = Math.sqrt(sd);
  return Float64Array.from(x, (v) => (sd > 0 ? (v - mean) / sd : 0));
}

/**
 * Cross-correlates two motion-energy signals over lags `−maxLagFrames…maxLagFrames`
 * (each lag needs at least half the signal in common).
 */
export function estimateTimeOffset(a: Float64Array, b: Float64Array, maxLagFrames: number): TimeOffset {
  const na = normalise(a);
  const nb = normalise(b);
  const n = Math.min(na.length, nb.length);
  const corr = (lag: number) => {
    let s = 0;
    let c = 0;
    for (let t = 0; t < na.length; t++) {
      const u = t + lag;
      if (u < 0 || u >= nb.length) continue;
      s += (na[t] as number) * (nb[u] as number);
      c++;
    }
    return c >= n / 2 ? s / c : Number.NEGATIVE_INFINITY;
  };
  let best = 0;
  let bestCorr = Number.NEGATIVE_INFINITY;
  for (let lag = -maxLagFrames; lag <= maxLagFrames; lag++) {
    const c = corr(lag);
    if (c > bestCorr) {
      bestCorr = c;
      best = lag;
    }
  }
  return { lagFrames: best, correlation: bestCorr, correlationAtZero: corr(0) };
}
