import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { type ArtifactIo, LocalArtifactIo } from '@polyvision/core';
import { type ArtifactRef, PolyvisionError } from '@polyvision/shared';

/** Where a storage element answers, by `storage_id`. */
export interface SeLocator {
  url: string;
  token: string;
}

/**
 * The demo workers' storage seam: uploads (the panorama ingest placed on a
 * storage element) are read from that SE over HTTP (`GET /api/v1/files/:id`,
 * bearer token); stage outputs are kept in a local artifact folder
 * (`storage_id` = `artifacts`), as a worker's scratch store would.
 */
export class DemoArtifactIo implements ArtifactIo {
  readonly #local: LocalArtifactIo;
  readonly #ses: ReadonlyMap<string, SeLocator>;
  constructor(artifactDir: string, ses: ReadonlyMap<string, SeLocator>) {
    this.#local = new LocalArtifactIo(artifactDir, 'artifacts');
    this.#ses = ses;
  }

  /**
   * @throws PolyvisionError `input_unavailable` (retriable) when the SE does not answer 200.
   */
  async openInput(ref: ArtifactRef, workDir: string, signal?: AbortSignal): Promise<string> {
    const se = this.#ses.get(ref.storage_id);
    if (!se) return this.#local.openInput(ref);
    const response = await fetch(`${se.url}/api/v1/files/${encodeURIComponent(ref.object_key)}`, {
      headers: { authorization: `Bearer ${se.token}` },
      ...(signal ? { signal } : {}),
    }).catch((error: unknown) => {
      throw new PolyvisionError('input_unavailable', `${ref.storage_id} unreachable: ${(error as Error).message}`, {
        retriable: true,
        cause: error,
      });
    });
    if (response.status !== 200 || !response.body) {
      throw new PolyvisionError(
        'input_unavailable',
        `GET ${ref.object_key} from ${ref.storage_id}: HTTP ${response.status}`,
        { retriable: true },
      );
    }
    const path = join(workDir, `input-${ref.kind}.mp4`);
    await pipeline(Readable.fromWeb(response.body as WebReadableStream<Uint8Array>), createWriteStream(path), {
      ...(signal ? { signal } : {}),
    });
    return path;
  }

  writeOutput(output: {
    kind: string;
    objectKey: string;
    localPath: string;
    contentType?: string;
  }): Promise<ArtifactRef> {
    return this.#local.writeOutput(output);
  }
}
