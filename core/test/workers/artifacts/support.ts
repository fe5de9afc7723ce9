import { createHash } from 'node:crypto';
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { type SeProcess, TOKEN } from '../../../../storage-element/test/support/se-process.ts';
import type { StorageElementConfig } from '../../../src/capacity/index.ts';

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Deterministic pseudo-random bytes (xorshift). */
export function testBytes(length: number, seed = 7): Buffer {
  const out = Buffer.alloc(length);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** The `STORAGE_ELEMENTS` entry of a running SE. */
export function seEntry(se: SeProcess, location: string, endpoint = se.url): StorageElementConfig {
  return { storage_id: se.env.STORAGE_ELEMENT_ID ?? 'se-test', endpoint, token: TOKEN, location };
}

/** Publishes `bytes` as `fileId` on `se` through its own write protocol (as ingest would). */
export async function putFile(se: SeProcess, fileId: string, bytes: Uint8Array): Promise<void> {
  const post = (path: string, body: unknown) =>
    se.fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const created = await post('/api/v1/uploads', {
    file_id: fileId,
    size_bytes: bytes.length,
    sha256: sha256Hex(bytes),
  });
  if (created.status !== 201) throw new Error(`create ${fileId}: ${created.status} ${await created.text()}`);
  const { upload_id } = (await created.json()) as { upload_id: string };
  const patched = await se.fetch(`/api/v1/uploads/${upload_id}`, {
    method: 'PATCH',
    headers: { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
    body: bytes,
  });
  if (patched.status !== 204) throw new Error(`patch ${fileId}: ${patched.status}`);
  const completed = await post(`/api/v1/uploads/${upload_id}/complete`, {});
  if (completed.status !== 201) throw new Error(`complete ${fileId}: ${completed.status}`);
}

/**
 * A TCP proxy in front of a real SE that cuts the first `cutConnections`
 * connections after `cutAfterBytes` bytes of response (or of request, with
 * `direction` = `request`): a network that drops a transfer mid-body.
 */
export async function cuttingProxy(
  targetUrl: string,
  cutAfterBytes: number,
  cutConnections = 1,
  direction: 'response' | 'request' = 'response',
): Promise<{ url: string; connections(): number; cuts(): number; close(): Promise<void> }> {
  const target = new URL(targetUrl);
  let connections = 0;
  let cuts = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const index = connections++;
    const upstream = tcpConnect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    let sent = 0;
    const relay = (from: Socket, to: Socket, cutting: boolean) =>
      from.on('data', (chunk: Buffer) => {
        if (cutting && index < cutConnections && sent + chunk.length > cutAfterBytes) {
          cuts++;
          to.write(chunk.subarray(0, Math.max(0, cutAfterBytes - sent)), () => {
            client.destroy();
            upstream.destroy();
          });
          from.pause();
          return;
        }
        if (cutting) sent += chunk.length;
        to.write(chunk);
      });
    relay(client, upstream, direction === 'request');
    relay(upstream, client, direction === 'response');
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    connections: () => connections,
    cuts: () => cuts,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** `polyvision_se_bytes_written_total` of an SE (bytes it received through uploads). */
export async function seBytesWritten(target: SeProcess): Promise<number> {
  const text = await (await target.fetch('/metrics')).text();
  const line = text.split('\n').find((l) => l.startsWith('polyvision_se_bytes_written_total'));
  return line ? Number(line.split(' ').at(-1)) : 0;
}
