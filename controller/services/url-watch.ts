import { request } from 'node:http';
import { connect } from 'node:net';
import type { Logger } from 'pino';
import type { CityServiceConfig } from '../../shared/config/city-config.js';
import type { EventLog } from '../../shared/events/event-log.js';

/** How often a URL service is probed (its `health_interval` when set). */
const PROBE_MS = 5000;

/** What the controller knows of a URL service: somebody else runs it, so it is watched, never restarted. */
export interface UrlServiceState {
  /** `external` until the first probe answers; then `running` (it answers) or `unhealthy` (it does not). */
  state: 'external' | 'running' | 'unhealthy';
  /** When `state` last changed. */
  updatedAt: number;
  /** Times it came back after being down: the restarts of whoever runs it, as seen from here. */
  restarts: number;
  /** Why it is unhealthy. */
  reason?: string;
}

interface Watched {
  config: CityServiceConfig;
  status: UrlServiceState;
  timer?: NodeJS.Timeout;
  /** It answered once, so a later recovery is a restart (the first answer is not). */
  seenUp: boolean;
}

/**
 * Probes the city's URL services as program services are probed — its `health` path answering 2xx, else a
 * connection to its host and port — so their status says whether they are up, since when, and how often they
 * came back. A change of state is recorded (`service.ready`, `service.exited` with the reason).
 */
export class UrlWatch {
  private readonly watched = new Map<string, Watched>();
  private stopped = false;

  constructor(private readonly o: { log: EventLog; logger?: Logger }) {}

  reconcile(services: CityServiceConfig[]): void {
    if (this.stopped) return;
    const wanted = new Map(services.filter((s) => s.url !== undefined).map((s) => [s.name, s]));
    for (const [name, w] of this.watched) {
      const next = wanted.get(name);
      if (next && next.url === w.config.url && next.health === w.config.health) {
        w.config = next;
        continue;
      }
      clearTimeout(w.timer);
      this.watched.delete(name);
    }
    for (const [name, config] of wanted) {
      if (this.watched.has(name)) continue;
      const w: Watched = { config, status: { state: 'external', updatedAt: Date.now(), restarts: 0 }, seenUp: false };
      this.watched.set(name, w);
      void this.probe(w);
    }
  }

  status(name: string): UrlServiceState | undefined {
    return this.watched.get(name)?.status;
  }

  stop(): void {
    this.stopped = true;
    for (const w of this.watched.values()) clearTimeout(w.timer);
    this.watched.clear();
  }

  private async probe(w: Watched): Promise<void> {
    const failure = await probeUrl(w.config.url!, w.config.health);
    if (this.watched.get(w.config.name) !== w) return;
    const next = failure === undefined ? 'running' : 'unhealthy';
    if (next !== w.status.state) {
      const recovered = next === 'running' && w.seenUp;
      w.status = {
        state: next,
        updatedAt: Date.now(),
        restarts: w.status.restarts + (recovered ? 1 : 0),
        ...(failure ? { reason: failure } : {}),
      };
      if (next === 'running') w.seenUp = true;
      await this.record(w, failure);
    }
    if (this.stopped || this.watched.get(w.config.name) !== w) return;
    w.timer = setTimeout(() => void this.probe(w), w.config.healthIntervalMs ?? PROBE_MS);
    w.timer.unref();
  }

  private async record(w: Watched, failure: string | undefined): Promise<void> {
    const service = w.config.name;
    if (failure === undefined) {
      await this.o.log.append({ type: 'service.ready', actor: 'ctl', subject: service, payload: { service } });
      return;
    }
    this.o.logger?.warn({ service, reason: failure }, 'URL service not answering');
    await this.o.log.append({
      type: 'service.exited',
      actor: 'ctl',
      subject: service,
      message: `service ${service}: ${failure}`,
      payload: { service, reason: failure },
    });
  }
}

/** Undefined when the service answers: its health path with 2xx, else a connection. Otherwise why not. */
export function probeUrl(url: string, health: string | undefined): Promise<string | undefined> {
  const target = new URL(url);
  const port = Number(target.port || 80);
  return new Promise((done) => {
    if (!health) {
      const socket = connect(port, target.hostname);
      socket.setTimeout(2000, () => socket.destroy(new Error('no answer within 2s')));
      socket.once('connect', () => {
        socket.destroy();
        done(undefined);
      });
      socket.once('error', (err) => done(`${target.host} does not take connections (${err.message})`));
      return;
    }
    const path = `${target.pathname === '/' ? '' : target.pathname}${health}`;
    const req = request({ host: target.hostname, port, path, method: 'GET', timeout: 2000, agent: false }, (res) => {
      res.resume();
      const code = res.statusCode ?? 0;
      done(code >= 200 && code < 300 ? undefined : `GET ${path} answered ${code}`);
    });
    req.once('timeout', () => req.destroy(new Error('no answer within 2s')));
    req.once('error', (err) => done(`GET ${path} failed: ${err.message}`));
    req.end();
  });
}
