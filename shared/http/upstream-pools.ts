import { Client, Pool, type Dispatcher } from 'undici';

// undici's connection pools, apart from ./upstream.ts's forwarder: undici is ~1 MB of code, which a controller
// loads only when one of its services is first asked for (controller/http/service-proxy.ts).

/** Where an upstream listens: a Unix socket, or a TCP host and port. */
export type UpstreamAddress = { socketPath: string } | { host: string; port: number };

function dispatcherOptions(address: UpstreamAddress): { origin: string; socketPath?: string } {
  return 'socketPath' in address
    ? { origin: 'http://localhost', socketPath: address.socketPath }
    : { origin: `http://${address.host}:${address.port}` };
}

/**
 * Keep-alive connection pools to upstreams, one per key. A key names one upstream process (the supervisor's
 * is a controller's pid): a restarted upstream listens where the old one did, and must not be handed the dead
 * one's connections, so opening a pool first closes the pools of the keys `live` no longer names.
 */
export class UpstreamPools {
  private readonly pools = new Map<string, Pool>();

  /** `connections`: at most this many requests in flight to one upstream, the rest queued (null: no bound). */
  constructor(private readonly connections: number | null) {}

  get(key: string, address: UpstreamAddress, live?: () => Iterable<string>): Pool {
    let pool = this.pools.get(key);
    if (pool) return pool;
    if (live) {
      const keep = new Set(live());
      for (const [old, oldPool] of this.pools) {
        if (keep.has(old)) continue;
        this.pools.delete(old);
        // Closing only ends connections: it has nobody to report to.
        void oldPool.destroy();
      }
    }
    const { origin, socketPath } = dispatcherOptions(address);
    pool = new Pool(origin, { socketPath, connections: this.connections, pipelining: 1 });
    this.pools.set(key, pool);
    return pool;
  }
}

/** A connection of its own for one long-lived request (a stream), so streams never starve a pool. */
export function ownConnection(address: UpstreamAddress): Dispatcher & { close(): Promise<void> } {
  const { origin, socketPath } = dispatcherOptions(address);
  return new Client(origin, { socketPath, pipelining: 1 });
}
