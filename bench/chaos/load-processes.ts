import { readdirSync, readFileSync } from 'node:fs';

/**
 * The processes this suite started, found through /proc by parentage (other suites on the same
 * machine run the same scripts): for CPU and memory readings by process.
 */
function table(): { pid: number; ppid: number; command: string }[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .flatMap((name) => {
      try {
        const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
        const command = readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ');
        return [{ pid: Number(name), ppid: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]), command }];
      } catch {
        return []; // gone meanwhile
      }
    });
}

/** This process's children whose command line contains `needle`, with all their descendants. */
export function ownProcesses(needle: string): number[] {
  const all = table();
  const found = all.filter((p) => p.ppid === process.pid && p.command.includes(needle)).map((p) => p.pid);
  for (let i = 0; i < found.length; i++)
    for (const p of all) if (p.ppid === found[i] && !found.includes(p.pid)) found.push(p.pid);
  return found;
}
