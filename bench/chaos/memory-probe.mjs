/**
 * A preload for the load suite (node --expose-gc --import bench/chaos/memory-probe.mjs): the
 * process answers its memory on a Unix socket named after its pid, so the suite reads the V8
 * heap of the API and the worker without a line of the service changed. A connection gets a
 * full collection, then one JSON line: process.memoryUsage() of the main thread (what is still
 * reachable, not what garbage happens to be waiting). Plain JavaScript: it loads before tsx does.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import process from 'node:process';
import { isMainThread } from 'node:worker_threads';

// Worker threads inherit the preload (the Temporal worker runs workflows in them): main thread only.
if (isMainThread) {
  const socket = path.join(os.tmpdir(), `lending-memory-probe-${process.pid}.sock`);
  fs.rmSync(socket, { force: true });
  const server = net.createServer((connection) => {
    // Twice: the first pass may leave objects that only the second finds unreachable (weak refs, finalizers).
    globalThis.gc?.();
    globalThis.gc?.();
    connection.end(`${JSON.stringify(process.memoryUsage())}\n`);
    connection.on('error', () => {});
  });
  server.on('error', () => {}); // a probe that cannot listen must never take the service down
  server.listen(socket);
  server.unref(); // never what keeps the process alive
  process.on('exit', () => fs.rmSync(socket, { force: true }));
}
