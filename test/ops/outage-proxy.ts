import net from 'node:net';

/** A TCP proxy on loopback in front of a server, which can play that server being down. */
export interface OutageProxy {
  readonly port: number;
  /**
   * For `ms`: cuts every open connection and refuses new ones (the port is closed: ECONNREFUSED),
   * then listens on the same port again. Resolves when it is back.
   */
  outage(ms: number): Promise<void>;
  close(): Promise<void>;
}

export async function startOutageProxy(targetPort: number): Promise<OutageProxy> {
  const sockets = new Set<net.Socket>();
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
    s.on('error', () => undefined);
  };
  const server = net.createServer((downstream) => {
    const upstream = net.connect(targetPort, '127.0.0.1');
    track(downstream);
    track(upstream);
    downstream.pipe(upstream);
    upstream.pipe(downstream);
    downstream.once('close', () => upstream.destroy());
    upstream.once('close', () => downstream.destroy());
  });
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        const address = server.address();
        resolve(typeof address === 'object' && address ? address.port : port);
      });
    });
  const stopListening = () => new Promise<void>((resolve) => server.close(() => resolve()));
  const cut = () => {
    for (const s of sockets) s.destroy();
  };
  const port = await listen(0);
  return {
    port,
    async outage(ms) {
      const closed = stopListening();
      cut();
      await closed;
      await new Promise((r) => setTimeout(r, ms));
      await listen(port);
    },
    async close() {
      const closed = stopListening();
      cut();
      await closed;
    },
  };
}
