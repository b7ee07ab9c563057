// Processes seen from outside, for every benchmark (plain Node: no tsx needed): free ports, CPU
// seconds and the process tree from /proc, the load average.
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';

const CLK_TCK = 100; // Linux USER_HZ

/** The three load averages of /proc/loadavg, e.g. "1.52 1.10 0.93". */
export const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

/** A loopback port free at the time of asking. */
export async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** utime + stime (+ cutime + cstime of reaped children when `withChildren`) of a pid, in seconds; 0 once gone. */
export function cpuSeconds(pid, withChildren = false) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12]) + (withChildren ? Number(f[13]) + Number(f[14]) : 0)) / CLK_TCK;
  } catch {
    return 0;
  }
}

/** Every process: pid, parent, command name and command line. */
export function processes() {
  const list = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
      list.push({ pid: Number(name), ppid, comm, cmdline });
    } catch {
      // exited meanwhile
    }
  }
  return list;
}

/** The processes below `rootPid`, breadth first. */
export function descendants(rootPid, all = processes()) {
  const out = [];
  const queue = [rootPid];
  while (queue.length) {
    const pid = queue.shift();
    for (const p of all) {
      if (p.ppid !== pid) continue;
      out.push(p);
      queue.push(p.pid);
    }
  }
  return out;
}

/** CPU seconds of every `postgres` process below `rootPid` (a postmaster with its reaped children, live backends). */
export function postgresCpuBelow(rootPid) {
  const all = processes();
  const below = (pid) => all.filter((p) => p.ppid === pid);
  let total = 0;
  const queue = [rootPid];
  while (queue.length > 0) {
    for (const p of below(queue.shift())) {
      queue.push(p.pid);
      if (p.comm === 'postgres') total += cpuSeconds(p.pid, below(p.pid).length > 0);
    }
  }
  return total;
}

/** GET /health once: the status code, or 0 when nothing answers. */
export function health(port) {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/health', agent: false, timeout: 1000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
  });
}

/** The pid the server logs in its `ready` line (pino's `pid` field). */
export function readyPid(stdout) {
  for (const line of stdout.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const entry = JSON.parse(line);
      if (typeof entry.msg === 'string' && entry.msg.startsWith('ready') && Number.isInteger(entry.pid)) return entry.pid;
    } catch {
      // partial line
    }
  }
  return undefined;
}
