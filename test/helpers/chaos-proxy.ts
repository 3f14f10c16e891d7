import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 in front of `targetPort` that destroys every connection (both sides) a random
 * `minMs`–`maxMs` after it was accepted: a network that keeps cutting long-lived connections such as SSE streams.
 */
export class ChaosProxy {
  /** Connections destroyed by the proxy's timer (not by either end). */
  cuts = 0;
  connections = 0;
  private readonly sockets = new Set<Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(targetPort: number, lifetime: { minMs: number; maxMs: number }): Promise<ChaosProxy> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    const proxy = new ChaosProxy(server, typeof address === 'object' && address ? address.port : 0);
    server.on('connection', (client) => proxy.accept(client, targetPort, lifetime));
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  private accept(client: Socket, targetPort: number, lifetime: { minMs: number; maxMs: number }): void {
    this.connections++;
    const upstream = connect(targetPort, '127.0.0.1');
    this.sockets.add(client);
    this.sockets.add(upstream);
    const end = () => {
      clearTimeout(timer);
      this.timers.delete(timer);
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    const timer = setTimeout(
      () => {
        if (!client.destroyed || !upstream.destroyed) this.cuts++;
        end();
      },
      lifetime.minMs + Math.random() * (lifetime.maxMs - lifetime.minMs),
    );
    this.timers.add(timer);
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.pipe(client);
  }

  async close(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
