import dns2 from 'dns2';

const { Packet } = dns2;

/**
 * A local DNS server (dns2, UDP on 127.0.0.1) answering TXT questions from a table the test
 * fills: a name with values answers them, a name marked 'nodata' exists without TXT records, any
 * other name is NXDOMAIN. Point the app at it with `dnsServers: [server.address]`.
 */
export interface TestDnsServer {
  address: string;
  setTxt(name: string, values: string[] | 'nodata'): void;
  close(): Promise<void>;
}

export async function startDnsServer(): Promise<TestDnsServer> {
  const records = new Map<string, string[] | 'nodata'>();
  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      const response = Packet.createResponseFromRequest(request);
      const [question] = request.questions;
      const entry = question ? records.get(question.name.toLowerCase()) : undefined;
      if (!question || entry === undefined) {
        response.header.rcode = Packet.RCODE.NXDOMAIN;
      } else if (entry !== 'nodata' && question.type === Packet.TYPE.TXT) {
        for (const value of entry) response.answers.push({ name: question.name, type: Packet.TYPE.TXT, class: Packet.CLASS.IN, ttl: 60, data: value } as unknown as (typeof response.answers)[number]);
      }
      send(response);
    },
  });
  const addresses = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  const port = (addresses as { udp: { port: number } }).udp.port;
  return {
    address: `127.0.0.1:${port}`,
    setTxt: (name, values) => records.set(name.toLowerCase(), values),
    close: async () => {
      await server.close();
    },
  };
}
