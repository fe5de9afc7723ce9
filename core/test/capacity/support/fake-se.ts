import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A storage element stand-in on a real loopback socket, for the SE
 * behaviour a real SE cannot be made to show (garbage JSON, absurd numbers,
 * redirects, hung sockets, 5xx storms). Serves a valid capacity report by
 * default, with ETag / 304.
 */
export interface FakeSe {
  url: string;
  id: string;
  /** Requests to /api/v1/capacity so far. */
  requests: number;
  /** Of which answered 304. */
  notModified: number;
  /** Replace what the next requests get; undefined restores the valid report. */
  behave(handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined): void;
  /** Change the valid report. */
  set(report: Partial<Record<string, unknown>>): void;
  close(): Promise<void>;
}

export async function startFakeSe(id: string, location = 'dc1', totalBytes = 1_000_000): Promise<FakeSe> {
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  let report: Record<string, unknown> = {
    storage_id: id,
    mode: 'rw',
    total: totalBytes,
    used: 0,
    available: totalBytes,
    reserved: 0,
    percent_used: 0,
    health: 'healthy',
    backend: 'local',
    location,
    endpoint: 'http://127.0.0.1:1',
    last_update: new Date().toISOString(),
  };
  const sockets = new Set<import('node:net').Socket>();
  const fake: FakeSe = {
    url: '',
    id,
    requests: 0,
    notModified: 0,
    behave(next) {
      handler = next;
    },
    set(over) {
      report = { ...report, ...over };
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
  const server: Server = createServer((req, res) => {
    if (req.url !== '/api/v1/capacity') {
      res.writeHead(404).end();
      return;
    }
    fake.requests++;
    if (handler) {
      handler(req, res);
      return;
    }
    const { last_update: _l, ...stable } = report;
    const etag = `"${Buffer.from(JSON.stringify(stable)).toString('base64url').slice(-24)}"`;
    if (req.headers['if-none-match'] === etag) {
      fake.notModified++;
      res.writeHead(304, { etag }).end();
      return;
    }
    res
      .writeHead(200, { 'content-type': 'application/json', etag })
      .end(JSON.stringify({ ...report, last_update: new Date().toISOString() }));
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}
