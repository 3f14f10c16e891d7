// Diagnosis only: summarises a .cpuprofile written by bench/cpu-profile.mjs — self and inclusive time per
// function, optionally only for samples whose stack passes through a frame matching FOCUS, and only within a
// time window (seconds from the profile's start; `--timeline` prints how busy each second was, to find it).
//
//   node bench/cpu-profile-summary.mjs <file.cpuprofile> [--top N] [--focus TEXT] [--from S] [--to S] [--timeline]
import { readFileSync } from 'node:fs';
import process from 'node:process';

const args = process.argv.slice(2);
const file = args[0];
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i > 0 ? args[i + 1] : fallback;
};
if (!file) {
  console.error(
    'usage: node bench/cpu-profile-summary.mjs <file.cpuprofile> [--top N] [--focus TEXT] [--from S] [--to S] [--timeline]',
  );
  process.exit(2);
}
const top = Number(option('top', 30));
const focus = option('focus', undefined);
const from = Number(option('from', -Infinity)) * 1e6;
const to = Number(option('to', Infinity)) * 1e6;

const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const label = (n) => {
  const url = n.callFrame.url.replace('file://', '').replace(/^.*\/(node_modules|dist)\//, '$1/');
  return `${n.callFrame.functionName || '(anonymous)'} ${url}:${n.callFrame.lineNumber + 1}`;
};

// Sample → time since start (µs); timeDeltas[i] is the gap before sample i.
const times = [];
let t = profile.startTime;
for (const delta of profile.timeDeltas) times.push((t += delta) - profile.startTime);
const msPerSample = (profile.endTime - profile.startTime) / profile.samples.length / 1000;

if (args.includes('--timeline')) {
  const seconds = new Map();
  profile.samples.forEach((id, i) => {
    const s = Math.floor(times[i] / 1e6);
    const b = seconds.get(s) ?? { busy: 0, all: 0 };
    b.all++;
    if (byId.get(id).callFrame.functionName !== '(idle)') b.busy++;
    seconds.set(s, b);
  });
  for (const [s, b] of [...seconds].sort((x, y) => x[0] - y[0])) {
    console.log(`${String(s).padStart(4)} s  ${((b.busy / b.all) * 100).toFixed(0).padStart(3)}% busy`);
  }
  process.exit(0);
}

const counts = new Map();
profile.samples.forEach((id, i) => {
  if (times[i] >= from && times[i] < to) counts.set(id, (counts.get(id) ?? 0) + 1);
});
const self = new Map();
const total = new Map();
let all = 0;
for (const [id, count] of counts) {
  const stack = [];
  for (let x = id; x !== undefined; x = parent.get(x)) stack.push(label(byId.get(x)));
  if (focus && !stack.some((l) => l.includes(focus))) continue;
  all += count;
  self.set(stack[0], (self.get(stack[0]) ?? 0) + count);
  for (const l of new Set(stack)) total.set(l, (total.get(l) ?? 0) + count);
}
const line = ([l, c]) =>
  `${(c * msPerSample).toFixed(0).padStart(8)} ms ${((c / all) * 100).toFixed(1).padStart(5)}%  ${l}`;
console.log(`${(all * msPerSample).toFixed(0)} ms of samples${focus ? ` under "${focus}"` : ''}`);
console.log('--- self');
for (const entry of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(line(entry));
console.log('--- inclusive');
for (const entry of [...total].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(line(entry));
