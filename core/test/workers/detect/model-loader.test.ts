import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Detector, resolveModel, sha256OfFile } from '../../../src/workers/detect/index.ts';

/** The repository's own detector (committed), so these tests need nothing from ../shared. */
const MODEL_PATH = new URL('../../../models/player-detector/player-detector.onnx', import.meta.url).pathname;
/** Its classes (core/models/player-detector/MODEL_CARD.md). */
const CLASS_MAP = { 0: 'player', 1: 'goalkeeper', 2: 'referee', 3: 'ball' } as const;

let server: Server;
let baseUrl: string;
let dir: string;
let sha256: string;
const hits: string[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pv-model-'));
  const model = await readFile(MODEL_PATH);
  sha256 = await sha256OfFile(MODEL_PATH);
  server = createServer((req, res) => {
    hits.push(req.url ?? '');
    if (req.url === '/models/player-detector.onnx') {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': model.length });
      res.end(model);
    } else if (req.url === '/flaky') {
      res.writeHead(503).end('try later');
    } else res.writeHead(404).end('no such model');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

describe('model loader: URL + sha256 + cache', () => {
  it('downloads once, verifies, then serves from the cache', async () => {
    const cacheDir = join(dir, 'cache');
    const source = { url: `${baseUrl}/models/player-detector.onnx`, sha256, cacheDir };
    const first = await resolveModel(source);
    expect(first).toEqual({ path: join(cacheDir, `${sha256}.onnx`), sha256, downloaded: true });
    expect(await sha256OfFile(first.path)).toBe(sha256);
    const second = await resolveModel(source);
    expect(second.downloaded).toBe(false);
    expect(hits.filter((h) => h === '/models/player-detector.onnx')).toHaveLength(1);
    // The detector opens straight from the URL source.
    const detector = await Detector.open({ model: source, modelVersion: 'player-detector-url', classMap: CLASS_MAP });
    expect(detector.info.sha256).toBe(sha256);
    await detector.close();
  });

  it('refuses a file whose digest differs and leaves nothing in the cache', async () => {
    const cacheDir = join(dir, 'cache-mismatch');
    const wrong = 'a'.repeat(64);
    await expect(
      resolveModel({ url: `${baseUrl}/models/player-detector.onnx`, sha256: wrong, cacheDir }),
    ).rejects.toEqual(expect.objectContaining({ code: 'model_checksum_mismatch', retriable: false }));
    expect(await readdir(cacheDir)).toEqual([]);
  });

  it('re-downloads when the cached copy was damaged', async () => {
    const cacheDir = join(dir, 'cache-damaged');
    const source = { url: `${baseUrl}/models/player-detector.onnx`, sha256, cacheDir };
    const { path } = await resolveModel(source);
    const { writeFile } = await import('node:fs/promises');
    await writeFile(path, 'damaged');
    const again = await resolveModel(source);
    expect(again.downloaded).toBe(true);
    expect(await sha256OfFile(again.path)).toBe(sha256);
  });

  it('classifies HTTP failures: 404 is final, 503 retriable', async () => {
    const cacheDir = join(dir, 'cache-errors');
    await expect(resolveModel({ url: `${baseUrl}/missing.onnx`, sha256, cacheDir })).rejects.toEqual(
      expect.objectContaining({ code: 'model_download_failed', retriable: false }),
    );
    await expect(resolveModel({ url: `${baseUrl}/flaky`, sha256, cacheDir })).rejects.toEqual(
      expect.objectContaining({ code: 'model_download_failed', retriable: true }),
    );
    await expect(resolveModel({ url: 'http://127.0.0.1:1/none.onnx', sha256, cacheDir })).rejects.toEqual(
      expect.objectContaining({ code: 'model_download_failed', retriable: true }),
    );
  });
});
