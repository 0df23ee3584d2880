import { readFileSync } from 'node:fs';
import path from 'node:path';

/** A V8 CPU profile (`--cpu-prof`), as much of it as the summary reads. */
interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number }[];
  startTime: number;
  endTime: number;
  samples: number[];
}

export interface TopFrames {
  /** Sampled time not idle, ms. */
  busyMs: number;
  frames: { frame: string; selfMs: number; share: number }[];
}

const ROOT = path.resolve(__dirname, '..');

/** Where a frame is: our file relative to the checkout, a package by its name, node's own as is. */
function place(url: string, line: number): string {
  if (!url) return '';
  const file = url.replace(/^file:\/\//, '');
  const inPackage = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(file);
  if (inPackage) return `${inPackage[1]}/${inPackage[2]}:${line + 1}`;
  return `${file.startsWith(ROOT) ? path.relative(ROOT, file) : file}:${line + 1}`;
}

/** The frames that spent the most time themselves (self time), summed by function and place. */
export function topFrames(file: string, count = 12): TopFrames {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const perSample = (profile.endTime - profile.startTime) / 1000 / Math.max(1, profile.samples.length);
  const self = new Map<string, number>();
  let busy = 0;
  for (const node of profile.nodes) {
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)' || !node.hitCount) continue;
    const ms = node.hitCount * perSample;
    busy += ms;
    const frame = `${functionName || '(anonymous)'} ${place(url, lineNumber)}`.trim();
    self.set(frame, (self.get(frame) ?? 0) + ms);
  }
  const frames = [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([frame, selfMs]) => ({ frame, selfMs, share: busy > 0 ? selfMs / busy : 0 }));
  return { busyMs: busy, frames };
}
