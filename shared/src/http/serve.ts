import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import type { Hono } from 'hono';
import { PolyvisionError } from '../errors/index.ts';

/** Options of {@link serve}. */
export interface ServeOptions {
  /** TCP port; 0 picks a free one (see the returned `port`). @defaultValue 0 */
  port?: number;
  /** Interface to bind. @defaultValue '127.0.0.1' */
  host?: string;
  /** Closes the server when aborted. */
  signal?: AbortSignal;
  /** On close, time in-flight requests get before their sockets are cut, in ms. @defaultValue 2_000 */
  closeGraceMs?: number;
  /**
   * How long an idle keep-alive socket stays open, in ms. Node's default (5 s)
   * races clients that reuse a pooled socket just as the server closes it: on a
   * loaded host the client's next request (a POST, which undici does not retry)
   * then fails with "other side closed". Longer than the clients' own idle
   * timeout (undici: 4 s) so the client, not the server, closes idle sockets.
   * @defaultValue 65_000
   */
  keepAliveTimeoutMs?: number;
}

/** A listening server. */
export interface RunningServer {
  /** The bound port (the real one when 0 was asked). */
  port: number;
  /** `http://host:port` (IPv6 hosts in brackets). */
  url: string;
  /** The underlying Node server, for upgrades and tests. */
  server: Server;
  /**
   * Stops accepting, closes idle keep-alive sockets at once, lets in-flight
   * requests finish for `closeGraceMs`, then cuts the rest. Idempotent.
   */
  close(): Promise<void>;
}

/**
 * Serves a hono app over HTTP/1.1 with @hono/node-server.
 *
 * @throws PolyvisionError `listen_failed` (e.g. EADDRINUSE, EACCES), with the cause.
 */
export async function serve(app: Pick<Hono, 'fetch'>, options: ServeOptions = {}): Promise<RunningServer> {
  const host = options.host ?? '127.0.0.1';
  const closeGraceMs = options.closeGraceMs ?? 2_000;
  const server = createAdaptorServer({ fetch: app.fetch }) as Server;
  server.keepAliveTimeout = options.keepAliveTimeoutMs ?? 65_000;
  await new Promise<void>((resolve, reject) => {
    const onError = (error: Error) => {
      reject(
        new PolyvisionError('listen_failed', `cannot listen on ${host}:${options.port ?? 0}: ${error.message}`, {
          cause: error,
        }),
      );
    };
    server.once('error', onError);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= new Promise<void>((resolve) => {
      options.signal?.removeEventListener('abort', onAbort);
      const cut = setTimeout(() => server.closeAllConnections(), closeGraceMs);
      server.close(() => {
        clearTimeout(cut);
        resolve();
      });
      server.closeIdleConnections();
    });
    return closing;
  };
  const onAbort = () => void close();
  if (options.signal?.aborted) await close();
  else options.signal?.addEventListener('abort', onAbort, { once: true });
  return { port, url, server, close };
}
