import { Writable } from 'node:stream';

/** A logger destination keeping each JSON line written to it, for a test to read. */
export function logLines(): { lines: string[]; sink: Writable } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  return { lines, sink };
}
