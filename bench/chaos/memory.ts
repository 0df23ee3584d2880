import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * Node flags that make a service process answer its memory (memory-probe.mjs): the probe
 * preloaded, and gc() exposed so a reading can follow a full collection.
 */
export const MEMORY_PROBE_ARGS = [
  '--expose-gc',
  '--import',
  pathToFileURL(path.join(__dirname, 'memory-probe.mjs')).href,
];

/** Bytes, of the process's main thread (the V8 heap) and of the whole process (RSS). */
export interface MemoryReading {
  rss: number;
  heapUsed: number;
}

/** The memory of a process started with MEMORY_PROBE_ARGS, after a full collection. */
export function readMemory(pid: number): Promise<MemoryReading> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(path.join(os.tmpdir(), `lending-memory-probe-${pid}.sock`));
    let answer = '';
    socket.setTimeout(30_000, () => socket.destroy(new Error(`the memory probe of ${pid} did not answer`)));
    socket.on('data', (chunk) => (answer += chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      try {
        const { rss, heapUsed } = JSON.parse(answer) as MemoryReading;
        resolve({ rss, heapUsed });
      } catch (error) {
        reject(error);
      }
    });
  });
}

export const mb = (bytes: number) => bytes / 1024 / 1024;
