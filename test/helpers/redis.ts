import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';

/** True when a redis-server binary is installed (Debian package redis-server; `.ci/run` installs it). */
export const hasRedis = (): boolean => spawnSync('redis-server', ['--version']).status === 0;

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no free port'))));
    });
  });
}

/** Starts a throwaway redis-server of our own on a free loopback port, without persistence. */
export async function startRedis(): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server did not start in 10 s: ${output.slice(-500)}`)), 10_000);
    const fail = (reason: string) => {
      clearTimeout(timer);
      reject(new Error(`${reason}: ${output.slice(-500)}`));
    };
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.once('error', (err) => fail(`redis-server could not run (${err.message})`));
    child.once('exit', (code) => fail(`redis-server exited with ${code}`));
  });
  return {
    url: `redis://127.0.0.1:${port}`,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
