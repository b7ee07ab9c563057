import dns2 from 'dns2';

const { Packet } = dns2;

export interface ZoneRecords {
  TXT?: string[];
  MX?: { exchange: string; priority: number }[];
  A?: string[];
  AAAA?: string[];
}

/** A real DNS server (UDP) on loopback serving a zone the test can change at any time. */
export interface TestDnsServer {
  /** `127.0.0.1:<port>`, for DNS_SERVERS. */
  readonly address: string;
  set(name: string, records: ZoneRecords): void;
  remove(name: string): void;
  /** Answer nothing for this name (the client times out). */
  blackhole(name: string): void;
  close(): Promise<void>;
}

/** A TXT value as character-strings of at most 255 bytes (RFC 1035), as DKIM keys need. */
const chunk = (value: string): string[] => value.match(/.{1,255}/gs) ?? [''];

export async function startDnsServer(): Promise<TestDnsServer> {
  const zone = new Map<string, ZoneRecords>();
  const silent = new Set<string>();
  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      const response = Packet.createResponseFromRequest(request);
      // dns2 encodes plain records; its typings ask for full Resource objects.
      const answers = response.answers as unknown as object[];
      const question = request.questions[0];
      const name = question?.name.toLowerCase().replace(/\.$/, '') ?? '';
      if (silent.has(name)) return;
      const records = zone.get(name);
      if (!records) {
        response.header.rcode = 3; // NXDOMAIN
      } else if (question) {
        const base = { name: question.name, class: Packet.CLASS.IN, ttl: 60 };
        if (question.type === Packet.TYPE.TXT) {
          for (const value of records.TXT ?? []) answers.push({ ...base, type: Packet.TYPE.TXT, data: chunk(value) });
        } else if (question.type === Packet.TYPE.MX) {
          for (const mx of records.MX ?? []) answers.push({ ...base, type: Packet.TYPE.MX, exchange: mx.exchange, priority: mx.priority });
        } else if (question.type === Packet.TYPE.A) {
          for (const address of records.A ?? []) answers.push({ ...base, type: Packet.TYPE.A, address });
        } else if (question.type === Packet.TYPE.AAAA) {
          for (const address of records.AAAA ?? []) answers.push({ ...base, type: Packet.TYPE.AAAA, address });
        }
      }
      void send(response);
    },
  });
  const addresses = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  const port = addresses.udp?.port;
  if (!port) throw new Error('DNS test server did not listen');
  return {
    address: `127.0.0.1:${port}`,
    set: (name, records) => zone.set(name.toLowerCase(), records),
    remove: (name) => zone.delete(name.toLowerCase()),
    blackhole: (name) => silent.add(name.toLowerCase()),
    close: () => server.close(),
  };
}
