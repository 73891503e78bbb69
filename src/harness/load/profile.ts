/**
 * The hottest functions of a V8 `.cpuprofile` (written by `node --cpu-prof`), by self time; `percent` is of
 * the busy time (idle samples left out).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

export interface ProfileEntry {
  readonly function: string;
  readonly where: string;
  readonly self_ms: number;
  readonly percent: number;
}

interface CpuProfile {
  readonly nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  readonly samples: number[];
  readonly timeDeltas: number[];
}

export function summarizeProfile(file: string, top = 20): ProfileEntry[] {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const frameOf = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const selfUs = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    const frame = frameOf.get(id);
    if (frame === undefined || frame.functionName === '(idle)') return;
    const url = frame.url.startsWith('file://')
      ? relative(process.cwd(), new URL(frame.url).pathname)
      : frame.url;
    const key = `${frame.functionName || '(anonymous)'}\u0000${url ? `${url}:${frame.lineNumber + 1}` : ''}`;
    selfUs.set(key, (selfUs.get(key) ?? 0) + delta);
    total += delta;
  });
  return [...selfUs.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, us]) => {
      const [fn, where] = key.split('\u0000') as [string, string];
      return {
        function: fn,
        where,
        self_ms: Math.round(us / 1000),
        percent: total === 0 ? 0 : Math.round((us / total) * 1000) / 10,
      };
    });
}

/**
 * The main thread's profile of the newest process in a folder, or null. Node names them
 * `CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile`; thread 0 is the main thread (tsx's loader runs in
 * a worker thread that writes a profile of its own).
 */
export function newestProfile(dir: string): string | null {
  const files = readdirSync(dir)
    .filter((f) => /\.0\.\d+\.cpuprofile$/.test(f))
    .sort();
  const last = files.at(-1);
  return last === undefined ? null : join(dir, last);
}
