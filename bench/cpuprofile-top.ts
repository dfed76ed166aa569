/**
 * The top of a .cpuprofile (V8's format, as http-load.ts's PROF writes):
 * self time by function and by package or source file, and the inclusive
 * time of the frames whose name matches FILTER.
 *
 *   npx tsx bench/cpuprofile-top.ts /tmp/prof/postgres-tasklease-get.cpuprofile [top=25]
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg] = process.argv.slice(2);
const top = Number(topArg ?? 25);
const profile = JSON.parse(readFileSync(file!, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const self = new Map<number, number>();
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const total = [...self.values()].reduce((a, b) => a + b, 0);

const where = (url: string): string => {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  const src = /\/(src|bench)\/(.*)$/.exec(url);
  if (src) return `${src[1]}/${src[2]}`;
  return url === '' ? '(native/gc/idle)' : url.replace(/^node:/, 'node:');
};
const label = (n: Node) => `${n.callFrame.functionName || '(anonymous)'} ${where(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;

function tally(key: (n: Node) => string): [string, number][] {
  const sums = new Map<string, number>();
  for (const [id, t] of self) {
    const k = key(byId.get(id)!);
    sums.set(k, (sums.get(k) ?? 0) + t);
  }
  return [...sums].sort((a, b) => b[1] - a[1]);
}
const pct = (t: number) => `${((100 * t) / total).toFixed(1).padStart(5)}%`;

// Inclusive time per frame label (each sample counted once per distinct label on its stack).
const inclusive = new Map<string, number>();
for (const [id, t] of self) {
  const seen = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const k = label(byId.get(at)!);
    if (!seen.has(k)) inclusive.set(k, (inclusive.get(k) ?? 0) + t);
    seen.add(k);
  }
}

console.log(`${file}: ${(total / 1e6).toFixed(2)} s sampled`);
console.log('\nself time by package / file:');
for (const [k, t] of tally((n) => where(n.callFrame.url)).slice(0, top)) console.log(`${pct(t)}  ${k}`);
console.log('\nself time by function:');
for (const [k, t] of tally(label).slice(0, top)) console.log(`${pct(t)}  ${k}`);
const filter = process.env.FILTER ? new RegExp(process.env.FILTER) : /src\//;
console.log(`\ninclusive time of frames matching ${filter}:`);
for (const [k, t] of [...inclusive]
  .filter(([k]) => filter.test(k))
  .sort((a, b) => b[1] - a[1])
  .slice(0, top))
  console.log(`${pct(t)}  ${k}`);
