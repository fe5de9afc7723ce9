import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { PolyvisionError } from '@polyvision/shared';

/** Where a model comes from: a local file, or a URL pinned by its sha256 and kept in a cache folder. */
export type ModelSource =
  | { path: string; sha256?: string }
  | { url: string; sha256: string; cacheDir: string; timeoutMs?: number };

/** The file to load and its verified digest. */
export interface ResolvedModel {
  path: string;
  /** Lower-case hex sha256 of the file. */
  sha256: string;
  /** Whether it was downloaded by this call (false: local path or cache hit). */
  downloaded: boolean;
}

/** sha256 of a file, lower-case hex. */
export async function sha256OfFile(path: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}

/**
 * Resolves a model to a local, verified file.
 *
 * A URL model is cached as `<cacheDir>/<sha256>.onnx`: a cached file whose
 * digest matches is reused; otherwise the URL is fetched to a temporary file
 * in the cache folder, hashed while it streams, and renamed into place only
 * when the digest matches (no half-written model is ever visible).
 *
 * @throws PolyvisionError (not retriable unless noted): `model_not_found` (no
 *   such local file), `model_checksum_mismatch`, `model_download_failed`
 *   (retriable for network errors and HTTP 5xx/429, not for other statuses).
 */
export async function resolveModel(source: ModelSource, signal?: AbortSignal): Promise<ResolvedModel> {
  if ('path' in source) {
    const exists = await stat(source.path).then(
      (s) => s.isFile(),
      () => false,
    );
    if (!exists) throw new PolyvisionError('model_not_found', `model file not found: ${source.path}`);
    const sha256 = await sha256OfFile(source.path);
    if (source.sha256 && source.sha256.toLowerCase() !== sha256) {
      throw new PolyvisionError(
        'model_checksum_mismatch',
        `${source.path} has sha256 ${sha256}, expected ${source.sha256}`,
      );
    }
    return { path: source.path, sha256, downloaded: false };
  }
  const expected = source.sha256.toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(expected)) {
    throw new PolyvisionError('model_checksum_invalid', `model sha256 must be 64 hex digits, got ${source.sha256}`);
  }
  await mkdir(source.cacheDir, { recursive: true });
  const target = join(source.cacheDir, `${expected}.onnx`);
  const cached = await sha256OfFile(target).catch(() => null);
  if (cached === expected) return { path: target, sha256: expected, downloaded: false };

  const temporary = join(source.cacheDir, `.${expected}.${randomUUID()}.part`);
  const signals = [AbortSignal.timeout(source.timeoutMs ?? 300_000), ...(signal ? [signal] : [])];
  try {
    let response: Response;
    try {
      response = await fetch(source.url, { signal: AbortSignal.any(signals) });
    } catch (cause) {
      signal?.throwIfAborted();
      throw new PolyvisionError('model_download_failed', `cannot fetch model ${source.url}: ${String(cause)}`, {
        retriable: true,
        cause,
      });
    }
    if (!response.ok || !response.body) {
      await response.body?.cancel();
      throw new PolyvisionError('model_download_failed', `model ${source.url} answered HTTP ${response.status}`, {
        retriable: response.status >= 500 || response.status === 429,
        details: { status: response.status },
      });
    }
    const hash = createHash('sha256');
    const hashing = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        hash.update(chunk);
        callback(null, chunk);
      },
    });
    await pipeline(
      Readable.fromWeb(response.body as import('node:stream/web').ReadableStream),
      hashing,
      createWriteStream(temporary),
      { signal: AbortSignal.any(signals) },
    );
    const actual = hash.digest('hex');
    if (actual !== expected) {
      throw new PolyvisionError(
        'model_checksum_mismatch',
        `model ${source.url} has sha256 ${actual}, expected ${expected}`,
      );
    }
    await rename(temporary, target);
    return { path: target, sha256: expected, downloaded: true };
  } finally {
    await rm(temporary, { force: true });
  }
}
