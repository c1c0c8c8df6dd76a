/**
 * Summarises a .cpuprofile (Chrome DevTools' format, as `bench:browser --profile <dir>` writes
 * them): self time by function and by script, the top N.
 *
 *   node --import tsx bench/profile-summary.ts <file.cpuprofile> [N]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, top = '25'] = process.argv.slice(2);
if (!file) throw new Error('usage: profile-summary.ts <file.cpuprofile> [N]');
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const selfByFunction = new Map<string, number>();
const selfByScript = new Map<string, number>();
let total = 0;
profile.samples.forEach((id, i) => {
  const delta = profile.timeDeltas[i] ?? 0;
  const node = byId.get(id);
  if (!node) return;
  total += delta;
  const script = node.callFrame.url.split('/').pop() || `(${node.callFrame.functionName || 'native'})`;
  const { functionName, lineNumber, columnNumber } = node.callFrame;
  const name = `${functionName || '(anonymous)'} ${script}:${lineNumber + 1}:${columnNumber + 1}`;
  selfByFunction.set(name, (selfByFunction.get(name) ?? 0) + delta);
  selfByScript.set(script, (selfByScript.get(script) ?? 0) + delta);
});
const print = (title: string, map: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [name, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, Number(top))) {
    console.log(`${(us / 1000).toFixed(1).padStart(9)} ms ${((us / total) * 100).toFixed(1).padStart(5)}%  ${name}`);
  }
};
console.log(`${file}: ${(total / 1000).toFixed(0)} ms sampled`);
print('self time by script', selfByScript);
print('self time by function', selfByFunction);
