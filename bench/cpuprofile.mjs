// Summary of a V8 .cpuprofile (node --cpu-prof; bench/track.mjs --profile DIR): self time by
// category (a package, a file of ours, a Node module, GC, native calls), the top functions, the
// inclusive time of our own functions, and optionally the stacks leading to one function.
//
//   node bench/cpuprofile.mjs FILE [--from S] [--to S] [--top N] [--seconds] [--incl a,b] [--callers NAME [--depth N]]
//
// --from/--to keep the samples between those seconds of the profile (skip start-up and warm-up;
// --seconds prints how busy each second was, to find them). Shares are of the busy time (idle
// samples left out). Files of ours are named from dist/ or src/ alike.
import console from 'node:console';
import { readFileSync } from 'node:fs';
import process from 'node:process';

const file = process.argv[2];
const arg = (n, d) => {
  const i = process.argv.indexOf(`--${n}`);
  return i > 0 ? process.argv[i + 1] : d;
};
const p = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const cat = (n) => {
  const { url, functionName } = n.callFrame;
  if (!url) return functionName.startsWith('(') ? functionName : `(native) ${functionName}`;
  let m = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
  if (m) return `pkg:${m[1]}`;
  m = url.match(/\/(dist|src)\/(.*)$/);
  if (m) return `app:${m[2].replace(/\.js$/, '')}`;
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  return url;
};
const from = Number(arg('from', 0)) * 1e6;
const to = Number(arg('to', 1e9)) * 1e6;
const incl = new Map();
const catT = new Map();
const fnT = new Map();
let t = 0;
let total = 0;
let idle = 0;
const perSec = [];
for (let i = 0; i < p.samples.length; i++) {
  t += p.timeDeltas[i];
  const dt = p.timeDeltas[i + 1] ?? 0;
  const n = byId.get(p.samples[i]);
  const sec = Math.floor(t / 1e6);
  perSec[sec] ??= [0, 0];
  perSec[sec][1] += dt;
  if (n.callFrame.functionName !== '(idle)') perSec[sec][0] += dt;
  if (t < from || t > to) continue;
  total += dt;
  if (n.callFrame.functionName === '(idle)') { idle += dt; continue; }
  const c = cat(n);
  catT.set(c, (catT.get(c) ?? 0) + dt);
  const fk = `${n.callFrame.functionName || '(anon)'} ${c}:${n.callFrame.lineNumber}`;
  fnT.set(fk, (fnT.get(fk) ?? 0) + dt);
  // inclusive: each distinct function name on the stack once
  const seen = new Set();
  for (let id = n.id; id !== undefined; id = parent.get(id)) {
    const f = byId.get(id).callFrame;
    const k = `${f.functionName || '(anon)'} ${cat(byId.get(id))}`;
    if (seen.has(k)) continue;
    seen.add(k);
    incl.set(k, (incl.get(k) ?? 0) + dt);
  }
}
const busy = total - idle;
const pc = (x) => `${((x / busy) * 100).toFixed(1).padStart(5)}%`;
if (process.argv.includes('--seconds')) console.log(perSec.map((s, i) => `${i}:${s ? ((s[0] / 1e6) * 100).toFixed(0) : '-'}`).join(' '));
console.log(`window ${(total / 1e6).toFixed(1)} s, busy ${(busy / 1e6).toFixed(2)} s (${((busy / total) * 100).toFixed(0)}%)`);
const top = Number(arg('top', 30));
console.log('\n-- self by category (share of busy) --');
for (const [k, v] of [...catT].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(pc(v), k);
console.log('\n-- self by function --');
for (const [k, v] of [...fnT].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(pc(v), k);
console.log('\n-- inclusive (app and selected) --');
const want = (arg('incl', '') || '').split(',').filter(Boolean);
for (const [k, v] of [...incl].sort((a, b) => b[1] - a[1]).filter(([k]) => k.includes(' app:') || want.some((w) => k.includes(w))).slice(0, top)) console.log(pc(v), k);
const callersOf = arg('callers', '');
if (callersOf) {
  // bottom-up: stacks (5 frames) ending in the named function's self time
  const stacks = new Map();
  let t2 = 0;
  for (let i = 0; i < p.samples.length; i++) {
    t2 += p.timeDeltas[i];
    if (t2 < from || t2 > to) continue;
    const dt = p.timeDeltas[i + 1] ?? 0;
    const n = byId.get(p.samples[i]);
    if (n.callFrame.functionName !== callersOf) continue;
    const frames = [];
    for (let id = parent.get(n.id), k = 0; id !== undefined && k < Number(arg('depth', 6)); id = parent.get(id), k++) {
      const f = byId.get(id).callFrame;
      frames.push(`${f.functionName || '(anon)'}@${cat(byId.get(id))}:${f.lineNumber}`);
    }
    const key = frames.join(' < ');
    stacks.set(key, (stacks.get(key) ?? 0) + dt);
  }
  console.log(`\n-- callers of ${callersOf} --`);
  for (const [k, v] of [...stacks].sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log(pc(v), k);
}
