/**
 * Where a `.cpuprofile` (node --cpu-prof, e.g. `bench/throughput.ts --cpu-prof`) spent its time:
 * self and total time per function, and self time per module (our files, each package, Node's
 * internals), over the whole profile or a window of it. Not a benchmark: it prints a profile.
 *
 *   node --import tsx bench/support/profile-summary.ts FILE [--from S] [--to S] [--top N]
 *   node --import tsx bench/support/profile-summary.ts FILE --timeline 1
 *
 * `--timeline STEP` prints, for each STEP seconds from the profile's start, its busy share and
 * its three functions of most self time: enough to find a workload's window (the throughput
 * bench runs its workloads one after the other in one server), then given as `--from`/`--to`.
 * Shares are of the window's busy samples (all samples but `(idle)`); idle is given apart.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    from: { type: 'string' },
    to: { type: 'string' },
    top: { type: 'string', default: '30' },
    timeline: { type: 'string' },
    stacks: { type: 'string' },
  },
});
const file = positionals[0];
if (!file) throw new Error('usage: profile-summary.ts FILE [--from S] [--to S] [--top N] [--timeline STEP]');
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;

const byId = new Map<number, ProfileNode>();
const parentOf = new Map<number, number>();
for (const node of profile.nodes) {
  byId.set(node.id, node);
  for (const child of node.children ?? []) parentOf.set(child, node.id);
}

/** A short place for a script URL: `src/…` of ours, the package of a dependency, `node:` internals. */
function moduleOf(url: string): string {
  if (url === '') return '(native)';
  if (url.startsWith('node:')) return url;
  const pnpm = /node_modules\/\.pnpm\/[^/]+\/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pnpm) return pnpm[1]!;
  const plain = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (plain) return plain[1]!;
  const ours = /packages\/server\/(.*)$/.exec(url);
  return ours ? ours[1]! : url;
}

function functionKey(frame: CallFrame): string {
  const name = frame.functionName || '(anonymous)';
  return frame.url === '' ? name : `${name} ${moduleOf(frame.url)}:${frame.lineNumber + 1}:${frame.columnNumber + 1}`;
}

// Each sample's time (µs from the start) and its duration (the next delta).
const times: number[] = [];
let clock = 0;
for (const delta of profile.timeDeltas) {
  clock += delta;
  times.push(clock);
}
const durationOf = (i: number) => (i + 1 < times.length ? times[i + 1]! - times[i]! : 0);

const seconds = (name: 'from' | 'to') => (values[name] === undefined ? undefined : Number(values[name]) * 1e6);
const from = seconds('from') ?? 0;
const to = seconds('to') ?? Number.POSITIVE_INFINITY;

if (values.timeline) {
  timeline(Number(values.timeline) * 1e6);
} else if (values.stacks) {
  stacks(new RegExp(values.stacks));
} else {
  summary();
}

function timeline(step: number): void {
  const buckets = new Map<number, { busy: number; idle: number; self: Map<string, number> }>();
  profile.samples.forEach((id, i) => {
    const index = Math.floor(times[i]! / step);
    const bucket = buckets.get(index) ?? { busy: 0, idle: 0, self: new Map<string, number>() };
    buckets.set(index, bucket);
    const frame = byId.get(id)!.callFrame;
    const us = durationOf(i);
    if (frame.functionName === '(idle)') bucket.idle += us;
    else {
      bucket.busy += us;
      const key = functionKey(frame);
      bucket.self.set(key, (bucket.self.get(key) ?? 0) + us);
    }
  });
  for (const [index, bucket] of [...buckets].sort((a, b) => a[0] - b[0])) {
    const total = bucket.busy + bucket.idle;
    const top = [...bucket.self]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 3)
      .map(([key, us]) => `${key} ${pct(us, bucket.busy)}`);
    const start = ((index * step) / 1e6).toFixed(1).padStart(6);
    console.log(`${start} s busy ${pct(bucket.busy, total).padStart(4)}  ${top.join(' | ')}`);
  }
}

/** The stacks (from the frame that matches `pattern` down to the root) most time went through. */
function stacks(pattern: RegExp): void {
  const paths = new Map<string, number>();
  let matched = 0;
  profile.samples.forEach((id, i) => {
    const at = times[i]!;
    if (at < from || at >= to) return;
    const frames: string[] = [];
    for (let node: number | undefined = id; node !== undefined; node = parentOf.get(node))
      frames.push(functionKey(byId.get(node)!.callFrame));
    const index = frames.findIndex((frame) => pattern.test(frame));
    if (index === -1) return;
    matched += durationOf(i);
    const path = frames.slice(index, index + 14).join(' < ');
    paths.set(path, (paths.get(path) ?? 0) + durationOf(i));
  });
  console.log(`stacks through ${pattern}: ${(matched / 1e3).toFixed(1)} ms`);
  for (const [path, us] of [...paths].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top)))
    console.log(`  ${(us / 1e3).toFixed(1).padStart(8)} ms  ${path}`);
}

function summary(): void {
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  const modules = new Map<string, number>();
  let busy = 0;
  let idle = 0;
  profile.samples.forEach((id, i) => {
    const at = times[i]!;
    if (at < from || at >= to) return;
    const us = durationOf(i);
    const leaf = byId.get(id)!;
    if (leaf.callFrame.functionName === '(idle)') {
      idle += us;
      return;
    }
    busy += us;
    const leafKey = functionKey(leaf.callFrame);
    self.set(leafKey, (self.get(leafKey) ?? 0) + us);
    const module = moduleOf(leaf.callFrame.url);
    modules.set(module, (modules.get(module) ?? 0) + us);
    // Total: once per function on the stack, however often it recurses.
    const seen = new Set<string>();
    for (let node: number | undefined = id; node !== undefined; node = parentOf.get(node)) {
      const key = functionKey(byId.get(node)!.callFrame);
      if (seen.has(key)) continue;
      seen.add(key);
      total.set(key, (total.get(key) ?? 0) + us);
    }
  });
  const top = Number(values.top);
  const window = `${(from / 1e6).toFixed(1)}-${to === Number.POSITIVE_INFINITY ? 'end' : (to / 1e6).toFixed(1)} s`;
  console.log(`${file}, ${window}: busy ${(busy / 1e3).toFixed(0)} ms, idle ${(idle / 1e3).toFixed(0)} ms\n`);
  print('self time by module', modules, busy, top);
  print('self time by function', self, busy, top);
  print('total time by function', total, busy, top);
}

function print(title: string, map: Map<string, number>, busy: number, top: number): void {
  console.log(`${title} (share of busy time)`);
  for (const [key, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`  ${pct(us, busy).padStart(6)}  ${(us / 1e3).toFixed(1).padStart(8)} ms  ${key}`);
  console.log('');
}

function pct(part: number, whole: number): string {
  return whole === 0 ? '0%' : `${((100 * part) / whole).toFixed(1)}%`;
}
