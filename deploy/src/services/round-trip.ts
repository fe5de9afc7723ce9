/** The outcome of one real request to a service. */
export interface RoundTrip {
  answering: boolean;
  /** Milliseconds from the first connection attempt to the reply or failure. */
  roundTripMs: number;
  /** The reply, or why there was none. */
  detail: string;
}

/**
 * Runs a request and times it; any error, or no reply within `timeoutMs`,
 * becomes `answering: false` with the error's message as `detail`.
 */
export async function timeRoundTrip(request: () => Promise<string>, timeoutMs: number): Promise<RoundTrip> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    const detail = await Promise.race([request(), timeout]);
    return { answering: true, roundTripMs: Math.round(performance.now() - started), detail };
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    return { answering: false, roundTripMs: Math.round(performance.now() - started), detail: detail || 'no answer' };
  } finally {
    clearTimeout(timer);
  }
}
