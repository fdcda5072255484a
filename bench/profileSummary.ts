// `npx tsx bench/profileSummary.ts <file.cpuprofile> [top]`: where a --cpu-prof profile's time
// went, as self time per function (with its file and line) and as inclusive time of the top
// frames, so a bench run's "where each microsecond goes" can be read without DevTools.
import { readFileSync } from 'node:fs';
import path from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const [file, topArg] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: npx tsx bench/profileSummary.ts <file.cpuprofile> [top]\n');
  process.exit(2);
}
const top = Number(topArg ?? 25);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const label = (n: ProfileNode) => `${n.callFrame.functionName || '(anonymous)'} ${path.basename(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;

const self = new Map<string, number>();
const inclusive = new Map<string, number>();
let total = 0;
let idle = 0;
profile.samples.forEach((id, i) => {
  const dt = profile.timeDeltas[i] ?? 0;
  const node = byId.get(id)!;
  total += dt;
  if (node.callFrame.functionName === '(idle)') idle += dt;
  self.set(label(node), (self.get(label(node)) ?? 0) + dt);
  // Each function once per sample, however deep it recurses.
  const seen = new Set<string>();
  for (let n: ProfileNode | undefined = node; n; n = byId.get(parent.get(n.id) ?? -1)) {
    const l = label(n);
    if (seen.has(l)) continue;
    seen.add(l);
    inclusive.set(l, (inclusive.get(l) ?? 0) + dt);
  }
});
const ms = (us: number) => (us / 1000).toFixed(1).padStart(8);
const busy = total - idle;
process.stdout.write(`${file}\nwall ${ms(total)} ms, busy (not idle) ${ms(busy)} ms\n\nself time:\n`);
for (const [l, t] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`${ms(t)} ms ${((t / busy) * 100).toFixed(1).padStart(5)} %  ${l}\n`);
process.stdout.write('\ninclusive time:\n');
for (const [l, t] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`${ms(t)} ms ${((t / busy) * 100).toFixed(1).padStart(5)} %  ${l}\n`);
