import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import type { HostEventPayload, HostResponse, HostState } from '../../shared/dto/hosts.js';
import type { HostConfig, HostProbe } from './host-config.js';
import { LOCAL_HOST } from './host.js';
import type { HostConnector, HostConnectorFactory } from './host-connector.js';

/** How often every host is checked (besides on demand and when its configuration changes). */
export const HOST_CHECK_INTERVAL_MS = 30_000;

/**
 * A check that has not answered after this long is taken as the host down: a connector that hangs never holds
 * a host `up`, nor a request waiting for its check. (SshHost bounds its own connect far below this.)
 */
export const HOST_CHECK_TIMEOUT_MS = 30_000;

/** What a host's connector is made from: a change of any of it is a new connection. */
function connectionOf(config: HostConfig): unknown[] {
  const { address, user, hostname, port, identity_file, known_hosts, work_root } = config;
  return [address, user, hostname, port, identity_file, known_hosts, work_root];
}

export interface HostRegistryOptions<C extends HostConnector> {
  /** The connector of a host's configuration (made again when its configuration changes). */
  connect: HostConnectorFactory<C>;
  /** How many of the city's sessions are placed on host `name` and run or are starting there now. */
  used(name: string): number;
  /** Records `host.up` or `host.down` (on a change of state only). */
  record(type: 'host.up' | 'host.down', payload: HostEventPayload, message: string): Promise<void>;
  logger: Logger;
  intervalMs?: number;
  checkTimeoutMs?: number;
}

interface Entry<C extends HostConnector> {
  config: HostConfig;
  connector: C;
  state: HostState;
  probe?: HostProbe;
  checkedAt?: string;
  /** The check under way: a second ask waits for it rather than starting another. */
  checking?: Promise<void>;
  /** Bumped when the entry is replaced or removed: a check of an older one changes nothing. */
  generation: number;
}

/**
 * The city's hosts: each `[[host]]` with its state (`up`, `down`, `unknown`), what its last check found and how
 * many sessions it has. Checks every host every `intervalMs` and on demand, follows the configuration (a host
 * added is checked at once, one removed or changed has its connector closed; a changed one starts `unknown`
 * again), and records `host.up` and `host.down` when a host's state changes, never at each check. `local`, this
 * machine, is always up and has no slot limit.
 */
export class HostRegistry<C extends HostConnector = HostConnector> {
  private readonly entries = new Map<string, Entry<C>>();
  private readonly listeners = new Set<() => void>();
  private timer: NodeJS.Timeout | undefined;
  private generation = 0;
  private stopped = false;

  constructor(private readonly options: HostRegistryOptions<C>) {}

  /**
   * Takes the hosts the configuration has now. A host whose connection changed (its address, keys or work root)
   * gets a new connector, `unknown` until checked, and one removed has its connector closed — which ends what runs
   * there; a change of its slots or labels alone is taken in place, its connection and sessions left alone. What is
   * new is checked at once (once started).
   */
  reconcile(configs: readonly HostConfig[]): void {
    if (this.stopped) return;
    const wanted = new Map(configs.map((c) => [c.name, c]));
    let changed = false;
    for (const [name, entry] of [...this.entries]) {
      const next = wanted.get(name);
      if (next && isDeepStrictEqual(connectionOf(next), connectionOf(entry.config))) {
        if (!isDeepStrictEqual(next, entry.config)) {
          entry.config = next;
          changed = true;
        }
        continue;
      }
      this.entries.delete(name);
      this.let(entry);
    }
    for (const config of configs) {
      if (this.entries.has(config.name)) continue;
      const entry: Entry<C> = {
        config,
        connector: this.options.connect(config),
        state: 'unknown',
        generation: ++this.generation,
      };
      this.entries.set(config.name, entry);
      changed = true;
      if (this.timer) void this.checkEntry(entry);
    }
    if (changed) this.changed();
    // The configuration's order, which `list` keeps.
    const order = [...this.entries.values()].sort(
      (a, b) => configs.findIndex((c) => c.name === a.config.name) - configs.findIndex((c) => c.name === b.config.name),
    );
    this.entries.clear();
    for (const entry of order) this.entries.set(entry.config.name, entry);
  }

  /** Checks every host now and then every interval. */
  start(): void {
    if (this.stopped || this.timer) return;
    const every = this.options.intervalMs ?? HOST_CHECK_INTERVAL_MS;
    this.timer = setInterval(() => this.checkAll(), every);
    this.timer.unref();
    this.checkAll();
  }

  /** Stops checking and closes every connector. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    const all = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(all.map((e) => this.close(e)));
  }

  /** Called whenever a host's state or what it has changes (the tick places sessions again). */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Whether the city has a host of that name (`local` always). */
  has(name: string): boolean {
    return name === LOCAL_HOST || this.entries.has(name);
  }

  /** The `[[host]]` configurations, in the configuration's order. */
  configs(): HostConfig[] {
    return [...this.entries.values()].map((e) => e.config);
  }

  /** The connector of a `[[host]]` (what runs its sessions, once SshHost is one), or undefined. */
  connector(name: string): C | undefined {
    return this.entries.get(name)?.connector;
  }

  /** `local` first, then each `[[host]]` in the configuration's order. */
  list(): HostResponse[] {
    return [this.localStatus(), ...[...this.entries.values()].map((e) => this.statusOf(e))];
  }

  status(name: string): HostResponse | undefined {
    if (name === LOCAL_HOST) return this.localStatus();
    const entry = this.entries.get(name);
    return entry && this.statusOf(entry);
  }

  /**
   * Checks a host now (joining a check under way) and answers what it found; undefined for no such host. `local`
   * is answered as it is: there is nothing to reach.
   */
  async check(name: string): Promise<HostResponse | undefined> {
    if (name === LOCAL_HOST) return this.localStatus();
    const entry = this.entries.get(name);
    if (!entry) return undefined;
    await this.checkEntry(entry);
    return this.status(name);
  }

  /** What the last check of a host found (placement reads tmux), or undefined before one. */
  probe(name: string): HostProbe | undefined {
    return this.entries.get(name)?.probe;
  }

  /**
   * A connector that lost its host between checks (its connection or its watchdog there ended): the host is
   * `down` with `why` at once, recorded, rather than at the next check. A connector no longer in use says nothing.
   */
  lost(connector: C, why: string): void {
    const entry = [...this.entries.values()].find((e) => e.connector === connector);
    if (!entry || this.stopped) return;
    const before = entry.state;
    // What it had stays known; its round trip does not.
    entry.probe = { ok: false, git: entry.probe?.git ?? false, tmux: entry.probe?.tmux ?? false, error: why };
    entry.checkedAt = new Date().toISOString();
    entry.state = 'down';
    const recorded = before !== 'down' ? this.recordChange(entry) : Promise.resolve();
    void recorded.then(() => this.changed());
  }

  private checkAll(): void {
    for (const entry of this.entries.values()) void this.checkEntry(entry);
  }

  private checkEntry(entry: Entry<C>): Promise<void> {
    entry.checking ??= this.runCheck(entry).finally(() => {
      entry.checking = undefined;
    });
    return entry.checking;
  }

  private async runCheck(entry: Entry<C>): Promise<void> {
    const { generation } = entry;
    const limit = this.options.checkTimeoutMs ?? HOST_CHECK_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    let probe: HostProbe;
    try {
      probe = await Promise.race([
        entry.connector.check(),
        new Promise<HostProbe>((resolve) => {
          timer = setTimeout(
            () => resolve({ ok: false, git: false, tmux: false, error: `no answer to its check in ${limit / 1000} s` }),
            limit,
          );
        }),
      ]);
    } catch (err) {
      probe = { ok: false, git: false, tmux: false, error: `its check failed: ${(err as Error).message}` };
    } finally {
      clearTimeout(timer);
    }
    // Removed, replaced or stopped meanwhile: this answer is about a configuration no longer in use.
    if (this.stopped || this.entries.get(entry.config.name)?.generation !== generation) return;
    const before = entry.state;
    entry.probe = probe;
    entry.checkedAt = new Date().toISOString();
    entry.state = probe.ok ? 'up' : 'down';
    if (entry.state !== before) await this.recordChange(entry);
    this.changed();
  }

  private async recordChange(entry: Entry<C>): Promise<void> {
    const { name, address } = entry.config;
    const probe = entry.probe!;
    const up = entry.state === 'up';
    const payload: HostEventPayload = {
      host: name,
      address,
      ...(!up && probe.error ? { reason: probe.error } : {}),
      ...(probe.rtt_ms !== undefined ? { rtt_ms: Math.round(probe.rtt_ms) } : {}),
    };
    const message = up ? `host ${name} is up` : `host ${name} is down: ${probe.error ?? 'its check failed'}`;
    try {
      await this.options.record(up ? 'host.up' : 'host.down', payload, message);
    } catch (err) {
      this.options.logger.warn({ err, host: name }, `could not record host.${entry.state}`);
    }
  }

  private statusOf(entry: Entry<C>): HostResponse {
    const { config, probe } = entry;
    return {
      name: config.name,
      address: config.address,
      state: entry.state,
      slots: config.slots,
      used: this.options.used(config.name),
      labels: [...config.labels],
      work_root: config.work_root,
      ...(config.source !== undefined ? { source: config.source } : {}),
      ...(probe?.rtt_ms !== undefined ? { rtt_ms: Math.round(probe.rtt_ms) } : {}),
      ...(probe?.node_version !== undefined ? { node_version: probe.node_version } : {}),
      ...(probe?.ctl_version !== undefined ? { ctl_version: probe.ctl_version } : {}),
      // What it has is known only of a host that answered (a round trip was measured).
      ...(probe?.rtt_ms !== undefined ? { git: probe.git, tmux: probe.tmux } : {}),
      ...(probe && !probe.ok && probe.error ? { last_error: probe.error } : {}),
      ...(entry.checkedAt ? { checked_at: entry.checkedAt } : {}),
    };
  }

  private localStatus(): HostResponse {
    return {
      name: LOCAL_HOST,
      address: LOCAL_HOST,
      state: 'up',
      slots: null,
      used: this.options.used(LOCAL_HOST),
      labels: [],
    };
  }

  /** An entry replaced or removed: its connector closed (in the background), its checks' answers ignored. */
  private let(entry: Entry<C>): void {
    entry.generation = -1;
    void this.close(entry);
    this.changed();
  }

  private async close(entry: Entry<C>): Promise<void> {
    try {
      await entry.connector.close();
    } catch (err) {
      this.options.logger.warn({ err, host: entry.config.name }, 'could not close a host’s connection');
    }
  }

  private changed(): void {
    for (const listener of this.listeners) {
      try {
        listener();
      } catch (err) {
        this.options.logger.warn({ err }, 'a host change listener failed');
      }
    }
  }
}
