import { createServer } from 'node:net';

/** A TCP port that was free a moment ago on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Whether something accepts connections on 127.0.0.1:port. */
export async function isListening(port: number): Promise<boolean> {
  const { connect } = await import('node:net');
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * A port `base` such that base + each of `offsets` was free a moment ago on 127.0.0.1: for a
 * server that derives several ports from one (the Temporal server's services, membership, HTTP
 * and metrics ports: config/temporal-server/production.yaml).
 */
export async function freePortBlock(offsets: number[]): Promise<number> {
  const free = (port: number) =>
    new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
  for (let tries = 0; tries < 50; tries++) {
    // Below Linux's ephemeral range (32768 and up), where outgoing connections take their ports.
    const base = 20_000 + Math.floor(Math.random() * 12_000);
    const all = await Promise.all(offsets.map((offset) => free(base + offset)));
    if (all.every(Boolean)) return base;
  }
  throw new Error('no free block of ports found');
}
