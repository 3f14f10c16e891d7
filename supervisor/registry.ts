import { readFileSync } from 'node:fs';
import { parse, stringify } from 'smol-toml';
import { writeFileAtomic } from '../shared/atomic-write.js';
import { ConfigError } from '../shared/config/config-error.js';
import type { AsyncOperation } from '../shared/dto/events.js';
import { Problem } from '../shared/http/problem.js';

/** One `[[cities]]` entry. */
export interface RegisteredCity {
  name: string;
  /** Absolute city directory. */
  path: string;
  /** Stopped with `POST /v0/city/{cityName}/stop`: registered, but no controller runs. */
  stopped: boolean;
}

/** One `[[pending_city_requests]]` entry: an accepted asynchronous request still owed its terminal event. */
export interface PendingRequest {
  request_id: string;
  operation: Extract<AsyncOperation, 'city.create' | 'city.unregister'>;
  name: string;
  path: string;
  /** Head of the supervisor log when the request was accepted; its terminal event comes after it. */
  supervisor_seq: number;
  accepted_at: string;
}

export interface RegistryData {
  cities: RegisteredCity[];
  pending: PendingRequest[];
}

/**
 * `$CTL_HOME/cities.toml`: the registered cities and the asynchronous requests in flight. Only the supervisor
 * writes it (one per home, under its lock); every write replaces the file atomically.
 */
export class Registry {
  private data: RegistryData = { cities: [], pending: [] };
  private writing: Promise<void> = Promise.resolve();

  constructor(readonly path: string) {}

  load(): void {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    let doc: Record<string, unknown>;
    try {
      doc = parse(text);
    } catch (err) {
      throw new ConfigError(`${this.path}: ${(err as Error).message.split('\n')[0]}`);
    }
    const cities = (doc.cities ?? []) as Record<string, unknown>[];
    const pending = (doc.pending_city_requests ?? []) as Record<string, unknown>[];
    if (!Array.isArray(cities) || !Array.isArray(pending)) {
      throw new ConfigError(`${this.path}: cities and pending_city_requests must be arrays of tables`);
    }
    this.data = {
      cities: cities.map((c, i) => ({
        name: str(c.name, `${this.path}: cities[${i}].name`),
        path: str(c.path, `${this.path}: cities[${i}].path`),
        stopped: c.stopped === true,
      })),
      pending: pending.map((p, i) => ({
        request_id: str(p.request_id, `${this.path}: pending_city_requests[${i}].request_id`),
        operation: p.operation === 'city.unregister' ? 'city.unregister' : 'city.create',
        name: str(p.name, `${this.path}: pending_city_requests[${i}].name`),
        path: str(p.path, `${this.path}: pending_city_requests[${i}].path`),
        supervisor_seq: Number(p.supervisor_seq ?? 0),
        accepted_at: typeof p.accepted_at === 'string' ? p.accepted_at : new Date(0).toISOString(),
      })),
    };
  }

  get cities(): readonly RegisteredCity[] {
    return this.data.cities;
  }

  get pending(): readonly PendingRequest[] {
    return this.data.pending;
  }

  cityNamed(name: string): RegisteredCity | undefined {
    return this.data.cities.find((c) => c.name === name);
  }

  cityAt(path: string): RegisteredCity | undefined {
    return this.data.cities.find((c) => c.path === path);
  }

  /** Forgets a pending request (its terminal event is recorded). */
  forget(requestId: string): Promise<void> {
    return this.update((draft) => {
      draft.pending = draft.pending.filter((p) => p.request_id !== requestId);
    });
  }

  /**
   * Applies a change and writes it out; changes are serialised, and the in-memory view changes only once the
   * file holds the new content (a failed write leaves both as they were).
   */
  update(change: (draft: RegistryData) => void): Promise<void> {
    const run = this.writing.then(() => {
      const draft = structuredClone(this.data);
      change(draft);
      try {
        writeFileAtomic(this.path, render(draft));
      } catch (err) {
        throw new Problem('internal', `internal: could not write the registry ${this.path}: ${(err as Error).message}`);
      }
      this.data = draft;
    });
    this.writing = run.catch(() => undefined);
    return run;
  }
}

function render(data: RegistryData): string {
  const doc: Record<string, unknown> = {
    cities: [...data.cities]
      .sort((a, b) => (a.name < b.name ? -1 : 1))
      .map((c) => (c.stopped ? { name: c.name, path: c.path, stopped: true } : { name: c.name, path: c.path })),
  };
  if (data.pending.length) doc.pending_city_requests = data.pending;
  return `# Cities managed by the ctl supervisor. Written by the supervisor; edit only while it is stopped.\n${stringify(doc)}\n`;
}

function str(value: unknown, where: string): string {
  if (typeof value !== 'string' || value === '') throw new ConfigError(`${where} must be a non-empty string`);
  return value;
}
