/**
 * A TCP proxy of our own between a worker process and its database server,
 * which can turn into a black hole: it stops forwarding in both directions
 * and answers nothing, but closes nothing — the connections stay open, as
 * behind a dropped route or a stateful firewall that lost its entry, so the
 * client hears neither an answer nor an error. Bytes sent meanwhile are held
 * (the sockets are paused, TCP's buffers fill) and delivered when the hole
 * closes, as a healed partition delivers retransmitted packets: late
 * statements reach the server after others have moved on. New connections
 * are accepted and then hear nothing either. (test/server/proxy.ts cuts
 * connections; this one keeps them silent.) It can also be pointed at
 * another server for new connections (pointAt).
 */
import net from 'node:net';

export class BlackHoleProxy {
  private server: net.Server | null = null;
  private readonly links = new Set<Link>();
  private swallowing = false;
  /** A hole armed to open at a marker: in what the client sends (`sent`) or what the server answers (`answer`). */
  private readonly armed: Record<'sent' | 'answer', { marker: string; fired: () => void } | null> = { sent: null, answer: null };
  port = 0;

  constructor(private target: { host: string; port: number }) {}

  /** In front of the server at `url` (host and port taken from it); `address()` gives the URL through the proxy. */
  static async before(url: string): Promise<BlackHoleProxy> {
    const parsed = new URL(url);
    const proxy = new BlackHoleProxy({ host: parsed.hostname, port: Number(parsed.port) });
    await proxy.up();
    return proxy;
  }

  address(url: string): string {
    const parsed = new URL(url);
    parsed.port = String(this.port);
    return parsed.toString();
  }

  private async up(): Promise<void> {
    const server = net.createServer((client) => {
      const upstream = net.connect(this.target);
      const links = [
        new Link(client, upstream, this.swallowing, { after: (chunk) => this.trip('sent', chunk) }),
        new Link(upstream, client, this.swallowing, { before: (chunk) => this.trip('answer', chunk) }),
      ];
      for (const link of links) this.links.add(link);
      const end = () => {
        for (const link of links) this.links.delete(link);
        client.destroy();
        upstream.destroy();
      };
      for (const socket of [client, upstream]) {
        socket.on('error', () => undefined);
        socket.on('close', end);
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  /**
   * New connections reach `port` from now on; those open stay with the server they reached — as when a DNS name or an
   * address is moved to another server (the failover suite's stale route, patroni.ts).
   */
  pointAt(port: number): void {
    this.target = { ...this.target, port };
  }

  /** From now on nothing passes either way, and nothing is closed. */
  swallow(): void {
    this.swallowing = true;
    for (const link of this.links) link.hold();
  }

  /**
   * The hole opens right after the first chunk a client sends that contains `marker` has been delivered: the server
   * runs that statement, and neither its answer nor anything after it gets through (a partition at that exact point).
   */
  swallowAfter(marker: string): Promise<void> {
    return new Promise((fired) => (this.armed.sent = { marker, fired }));
  }

  /**
   * The hole opens as the first answer from the server that contains `marker` arrives, holding that answer too: the
   * server did the work (a claim committed) and the client hears nothing of it until release().
   */
  swallowReplyWith(marker: string): Promise<void> {
    return new Promise((fired) => (this.armed.answer = { marker, fired }));
  }

  private trip(direction: 'sent' | 'answer', chunk: Buffer): void {
    const armed = this.armed[direction];
    if (!armed || !chunk.includes(armed.marker)) return;
    this.armed[direction] = null;
    this.swallow();
    armed.fired();
  }

  /** The hole closes: what was held is delivered, and traffic flows again. */
  release(): void {
    this.swallowing = false;
    for (const link of this.links) link.flush();
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const link of this.links) link.destroy();
    this.links.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** One direction of a connection: forwards each chunk, or holds it while the hole is open. */
class Link {
  private held: Buffer[] | null;

  constructor(
    private readonly from: net.Socket,
    private readonly to: net.Socket,
    holding: boolean,
    /** Called with each chunk before it is forwarded or held (it may open the hole), and after it was forwarded. */
    hooks: { before?: (chunk: Buffer) => void; after?: (chunk: Buffer) => void } = {},
  ) {
    this.held = holding ? [] : null;
    from.on('data', (chunk: Buffer) => {
      hooks.before?.(chunk);
      if (this.held) return void this.held.push(chunk);
      to.write(chunk);
      hooks.after?.(chunk);
    });
  }

  hold(): void {
    this.held ??= [];
  }

  flush(): void {
    const held = this.held ?? [];
    this.held = null;
    for (const chunk of held) this.to.write(chunk);
  }

  destroy(): void {
    this.from.destroy();
    this.to.destroy();
  }
}
