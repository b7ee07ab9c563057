import http from 'node:http';

/**
 * A round-robin HTTP load balancer on loopback, as deployments put in front of ROLE=api processes:
 * it sends requests only to upstreams whose GET /health/ready answered 200 at its last check
 * (every 200 ms), reuses connections to them (keep-alive), and tries another upstream when one
 * refuses the connection (nothing was sent). Any other failure is answered 502 to the client.
 */
export interface Balancer {
  readonly url: string;
  add(port: number): void;
  remove(port: number): void;
  /** Upstreams answering ready at the last check. */
  healthy(): number[];
  close(): Promise<void>;
}

export async function startBalancer(): Promise<Balancer> {
  const upstreams = new Map<number, boolean>();
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  let turn = 0;
  const check = async (port: number) => {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/health/ready`, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      if (upstreams.has(port)) upstreams.set(port, res.status === 200);
    } catch {
      if (upstreams.has(port)) upstreams.set(port, false);
    }
  };
  const poller = setInterval(() => void Promise.all([...upstreams.keys()].map(check)), 200);
  const healthy = () => [...upstreams].filter(([, ok]) => ok).map(([port]) => port);

  const forward = (req: http.IncomingMessage, body: Buffer, res: http.ServerResponse, tried: Set<number>): void => {
    const candidates = healthy().filter((p) => !tried.has(p));
    const port = candidates[turn++ % Math.max(1, candidates.length)];
    if (port === undefined) {
      res.writeHead(502).end('no upstream');
      return;
    }
    tried.add(port);
    const upstream = http.request({ host: '127.0.0.1', port, method: req.method, path: req.url, headers: req.headers, agent }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNREFUSED' && !res.headersSent) {
        upstreams.set(port, false);
        forward(req, body, res, tried);
      } else if (!res.headersSent) res.writeHead(502).end(`upstream ${port}: ${err.code ?? err.message}`);
      else res.destroy();
    });
    upstream.end(body);
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => forward(req, Buffer.concat(chunks), res, new Set()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    add(p) {
      upstreams.set(p, false);
      void check(p);
    },
    remove(p) {
      upstreams.delete(p);
    },
    healthy,
    async close() {
      clearInterval(poller);
      agent.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
