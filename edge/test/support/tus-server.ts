/**
 * A real tus 1.0.0 server for uploader tests (@tus/server + @tus/file-store),
 * shaped like the core's ingest: `/api/v1/uploads`, a bearer token, the
 * `X-Content-SHA256` confirmation on the final PATCH and on HEAD of a
 * complete upload, and a switch that makes it answer `507` with
 * `Retry-After` for a while. It can be stopped and started again on the same
 * port and folder (an ingest restart).
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { FileStore } from '@tus/file-store';
import { Server } from '@tus/server';

export interface TestIngest {
  url: string;
  port: number;
  /** Answer 507 with `Retry-After: retryAfterS` to POST and PATCH until `untilMs` (epoch ms). */
  refuseUntil(untilMs: number, retryAfterS: number): void;
  /** Leave out `X-Content-SHA256` (an ingest that does not confirm). */
  hideConfirmation(hide: boolean): void;
  /** Requests seen, by method and status. */
  log: Array<{ method: string; status: number; atMs: number }>;
  /** Completed uploads: metadata and the sha256 of the stored bytes. */
  completed(): Promise<Array<{ id: string; metadata: Record<string, string>; sha256: string; sizeBytes: number }>>;
  /** Uploads created but not complete: bytes received so far and the declared size. */
  partial(): Promise<Array<{ id: string; receivedBytes: number; sizeBytes: number }>>;
  /** Stops listening (in-flight connections are cut). */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}

/** Starts the server on a free port (or `port`). */
export async function startTestIngest(options: { dir: string; token: string; port?: number }): Promise<TestIngest> {
  const tus = new Server({
    path: '/api/v1/uploads',
    datastore: new FileStore({ directory: options.dir }),
    onUploadFinish: async (_req, upload) =>
      hide ? {} : { headers: { 'X-Content-SHA256': await sha256Of(join(options.dir, upload.id)) } },
  });
  let refuse = { untilMs: 0, retryAfterS: 1 };
  let hide = false;
  const log: TestIngest['log'] = [];
  let server: HttpServer | null = null;
  let port = options.port ?? 0;

  const handler = async (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => {
    res.on('finish', () => log.push({ method: req.method ?? '', status: res.statusCode, atMs: Date.now() }));
    if (req.headers.authorization !== `Bearer ${options.token}`) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"code":"unauthorized","message":"bad token"}');
      req.resume();
      return;
    }
    if ((req.method === 'POST' || req.method === 'PATCH') && Date.now() < refuse.untilMs) {
      req.resume();
      res
        .writeHead(507, {
          'content-type': 'application/json',
          'retry-after': String(refuse.retryAfterS),
          'tus-resumable': '1.0.0',
        })
        .end('{"code":"insufficient_storage","message":"no storage element can take the file"}');
      return;
    }
    if (req.method === 'HEAD') {
      const id = (req.url ?? '').split('/').pop() ?? '';
      try {
        const info = JSON.parse(await readFile(join(options.dir, `${id}.json`), 'utf8')) as { size?: number };
        const stored = await sha256Of(join(options.dir, id));
        const { size } = await import('node:fs/promises').then((f) => f.stat(join(options.dir, id)));
        if (info.size === size && !hide) res.setHeader('X-Content-SHA256', stored);
      } catch {
        // unknown upload: @tus/server answers 404
      }
    }
    await tus.handle(req, res);
  };

  const ingest: TestIngest = {
    url: '',
    port: 0,
    log,
    hideConfirmation(value) {
      hide = value;
    },
    refuseUntil(untilMs, retryAfterS) {
      refuse = { untilMs, retryAfterS };
    },
    async completed() {
      const out: Awaited<ReturnType<TestIngest['completed']>> = [];
      for (const name of await readdir(options.dir)) {
        if (!name.endsWith('.json')) continue;
        const id = name.slice(0, -5);
        const info = JSON.parse(await readFile(join(options.dir, name), 'utf8')) as {
          size: number;
          offset?: number;
          metadata: Record<string, string>;
        };
        const data = await readFile(join(options.dir, id)).catch(() => null);
        if (!data || data.length !== info.size) continue;
        out.push({
          id,
          metadata: info.metadata,
          sha256: createHash('sha256').update(data).digest('hex'),
          sizeBytes: data.length,
        });
      }
      return out;
    },
    async partial() {
      const out: Awaited<ReturnType<TestIngest['partial']>> = [];
      for (const name of await readdir(options.dir)) {
        if (!name.endsWith('.json')) continue;
        const id = name.slice(0, -5);
        const info = JSON.parse(await readFile(join(options.dir, name), 'utf8')) as { size: number };
        const data = await readFile(join(options.dir, id)).catch(() => null);
        if (data && data.length < info.size) out.push({ id, receivedBytes: data.length, sizeBytes: info.size });
      }
      return out;
    },
    async stop() {
      const s = server;
      server = null;
      if (!s) return;
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    },
    async start() {
      const s = createServer((req, res) => {
        handler(req, res).catch((error) => {
          if (!res.headersSent) res.writeHead(500).end(String(error));
        });
      });
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.listen(port, '127.0.0.1', () => resolve());
      });
      port = (s.address() as AddressInfo).port;
      server = s;
      ingest.port = port;
      ingest.url = `http://127.0.0.1:${port}`;
    },
  };
  await ingest.start();
  return ingest;
}
