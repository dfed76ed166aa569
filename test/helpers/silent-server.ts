import { createServer, type Socket } from 'node:net';
import { expect } from 'vitest';
import { ErrorCode, StoreConnectTimeoutError } from '../../src/core/errors.js';
import type { Store } from '../../src/store/types.js';

/** A TCP server on 127.0.0.1 that accepts connections and never sends a byte: a database that hangs at the handshake. */
export async function startSilentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the silent server has no port');
  return {
    port: address.port,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Opens a store (with connectTimeoutMs 400) on a silent server and checks
 * that migrate() fails within the timeout with STORE_CONNECT_TIMEOUT, naming
 * the host (`host(port)`) and never the password `s3cret` the URL carries.
 */
export async function expectConnectTimeout(open: (port: number) => Store, host: (port: number) => string): Promise<void> {
  const server = await startSilentServer();
  const store = open(server.port);
  try {
    const started = Date.now();
    const error = await store.migrate().then(
      () => null,
      (e: unknown) => e,
    );
    const elapsed = Date.now() - started;
    expect(error).toBeInstanceOf(StoreConnectTimeoutError);
    expect(error).toMatchObject({ code: ErrorCode.STORE_CONNECT_TIMEOUT, host: host(server.port) });
    expect((error as Error).message).toContain('400 ms');
    expect((error as Error).message).not.toContain('s3cret');
    expect(elapsed).toBeGreaterThanOrEqual(350);
    expect(elapsed).toBeLessThan(5_000);
  } finally {
    await store.close();
    await server.close();
  }
}
