import { randomBytes } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, isAbsolute } from 'node:path';
import type { Logger } from 'pino';
import {
  CITY_NAME_PATTERN,
  configReadError,
  declaredCityName,
  parseCityConfig,
  type CityConfig,
} from '../shared/config/city-config.js';
import { ConfigError } from '../shared/config/config-error.js';
import type { AsyncAcceptedResponse } from '../shared/dto/common.js';
import type { CityCreateRequest, CityInfo, CityRegisterRequest } from '../shared/dto/cities.js';
import type { CityLifecyclePayload } from '../shared/dto/events.js';
import { cityLog } from '../shared/events/city-log.js';
import { formatCursor } from '../shared/events/cursor.js';
import type { EventLog } from '../shared/events/event-log.js';
import { bounded, FsTimeoutError } from '../shared/fs/bounded.js';
import {
  checkPlacement,
  DirectoryRefused,
  resolveDirectory,
  type KnownCity,
  type ResolvedDirectory,
} from '../shared/fs/city-directory.js';
import { Problem } from '../shared/http/problem.js';
import { cityPaths } from '../shared/paths.js';
import { SUPPORTED_PROVIDERS, type ReadinessProber } from '../shared/readiness.js';
import type { EventView } from './event-view.js';
import type { Reconciler } from './reconciler.js';
import type { PendingRequest, Registry } from './registry.js';
import { ensureRuntimeLayout, isCityDirectory, scaffoldCity } from './scaffold.js';

export interface CityOperationsOptions {
  registry: Registry;
  reconciler: Reconciler;
  events: EventView;
  /** The supervisor's own log, for lifecycle events of a city whose log is gone. */
  supervisorLog: EventLog;
  prober: ReadinessProber;
  logger: Logger;
  /** `$CTL_HOME`, its real path: no city may be in it or around it. */
  home: string;
  /** How long `start` and `stop` wait for the controller. */
  startTimeoutMs: number;
  stopTimeoutMs: number;
}

/** `req-` + 24 lowercase hex characters: the correlation id of an asynchronous request. */
export function newAsyncRequestId(): string {
  return `req-${randomBytes(12).toString('hex')}`;
}

/**
 * The supervisor's city mutations: create, register, unregister, start, stop. Each validates, changes the
 * registry (serialised: one at a time, so two requests cannot both pass the same check), records its events
 * and wakes the reconciler, which does the slow part.
 */
export class CityOperations {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly o: CityOperationsOptions) {}

  list(): CityInfo[] {
    return this.o.registry.cities
      .map((city) => this.info(city.name))
      .filter((info): info is CityInfo => info !== undefined)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  info(name: string): CityInfo | undefined {
    const city = this.o.registry.cityNamed(name);
    if (!city) return undefined;
    const listing = this.o.reconciler.listing(city.path);
    if (!listing)
      return { name: city.name, path: city.path, running: false, status: city.stopped ? 'stopped' : 'starting' };
    const { info } = listing;
    if (listing.servedName !== city.name && info.running) {
      // The controller still serves the name the city had: it is being restarted under the new one.
      info.running = false;
      info.status = 'restarting';
    }
    info.name = city.name;
    return info;
  }

  create(body: CityCreateRequest): Promise<AsyncAcceptedResponse> {
    return this.serialised(async () => {
      const { registry } = this.o;
      const provider = body.provider;
      const startCommand = body.start_command;
      if ((provider === undefined) === (startCommand === undefined)) {
        const message = 'exactly one of provider and start_command is required';
        throw new Problem('validation-failed', `invalid: ${message}`, {
          errors: [
            { location: 'body.provider', message, value: provider },
            { location: 'body.start_command', message, value: startCommand },
          ],
        });
      }
      if (provider !== undefined && !SUPPORTED_PROVIDERS.includes(provider)) {
        const message = `unknown provider ${JSON.stringify(provider)}; supported: ${SUPPORTED_PROVIDERS.join(', ')}`;
        throw new Problem('validation-failed', `invalid: ${message}`, {
          errors: [{ location: 'body.provider', message, value: provider }],
        });
      }
      const { path, missing } = await this.placeCity(body.dir, 'body.dir');
      const name = basename(path);
      if (!CITY_NAME_PATTERN.test(name)) {
        const message = `directory name ${JSON.stringify(name)} cannot name a city (letters, digits, '.', '_', '-'; not starting with a symbol)`;
        throw new Problem('validation-failed', `invalid: ${message}`, {
          errors: [{ location: 'body.dir', message, value: body.dir }],
        });
      }
      if (registry.pending.some((p) => p.path === path)) {
        throw new Problem('operation-in-progress', `conflict: city initialization already in progress at ${path}`);
      }
      if (missing.length === 0 && (await isCityDirectory(path)))
        throw new Problem('conflict-wrong-state', `conflict: city already initialized at ${path}`);
      const holder = registry.cityNamed(name);
      if (holder) {
        throw new Problem(
          'conflict-wrong-state',
          `conflict: city name ${name} is already registered for ${holder.path}`,
        );
      }
      if (provider !== undefined) {
        const readiness = await this.o.prober.probe(provider);
        if (readiness.status !== 'configured') {
          throw new Problem(
            'provider-not-ready',
            `provider_not_ready: provider ${provider} is ${readiness.status}: ${readiness.detail ?? ''}`.trim(),
          );
        }
      }

      const warnings: string[] = [];
      if (startCommand !== undefined) {
        // Accepted all the same (it may be installed later), but a person should know now, not from a crash loop.
        const found = await this.o.prober.probeCommand(
          { name: 'start_command', displayName: 'start command', command: startCommand, cwd: path },
          true,
        );
        if (found.status === 'not_installed' || found.status === 'invalid_configuration') {
          warnings.push(
            `start_command ${JSON.stringify(startCommand)}: ${found.detail ?? found.status}; the city's agents cannot start until it is installed`,
          );
        }
      }
      const cursor = this.o.events.captureCursor();
      cursor.set(name, 0);
      const requestId = newAsyncRequestId();
      const profile = body.bootstrap_profile === undefined ? undefined : normaliseProfile(body.bootstrap_profile);
      let undoScaffold: () => Promise<void>;
      try {
        undoScaffold = await scaffoldCity(path, missing, { provider, startCommand, bootstrapProfile: profile });
      } catch (err) {
        const refused = refusedFor(err, path);
        if (refused) throw directoryProblem(refused, 'body.dir', body.dir);
        this.o.logger.error({ err, path }, 'city scaffold failed');
        throw new Problem('internal', `internal: could not scaffold city at ${path}: ${(err as Error).message}`);
      }
      const pending: PendingRequest = {
        request_id: requestId,
        operation: 'city.create',
        name,
        path,
        supervisor_seq: cursor.get('__supervisor__') ?? 0,
        accepted_at: new Date().toISOString(),
      };
      try {
        await registry.update((draft) => {
          draft.cities.push({ name, path, stopped: false });
          draft.pending.push(pending);
        });
      } catch (err) {
        await undoScaffold();
        throw err;
      }
      try {
        await this.recordLifecycle(name, path, 'city.created');
      } catch (err) {
        // Without its city.created the create did not happen: take it all back.
        await registry.update((draft) => {
          draft.cities = draft.cities.filter((c) => c.path !== path);
          draft.pending = draft.pending.filter((p) => p.request_id !== requestId);
        });
        await undoScaffold();
        throw new Problem('internal', `internal: could not record city.created for ${path}: ${(err as Error).message}`);
      }
      this.o.reconciler.wake();
      return { request_id: requestId, event_cursor: formatCursor(cursor), ...(warnings.length ? { warnings } : {}) };
    });
  }

  register(body: CityRegisterRequest): Promise<{ created: boolean; city: CityInfo }> {
    return this.serialised(async () => {
      const { registry } = this.o;
      if (!isAbsolute(body.path)) {
        const message = 'must be an absolute path';
        throw new Problem('validation-failed', `invalid: path ${message}`, {
          errors: [{ location: 'body.path', message, value: body.path }],
        });
      }
      const { path, missing } = await this.placeCity(body.path, 'body.path', { registering: true });
      let config: CityConfig;
      try {
        if (missing.length) throw configReadError(Object.assign(new Error('missing'), { code: 'ENOENT' }), path);
        config = await loadCityConfig(cityPaths(path).config);
      } catch (err) {
        const message =
          err instanceof ConfigError && err.message.endsWith('no city.toml found')
            ? `${path} is not a city directory (no city.toml found)`
            : (err as Error).message;
        throw new Problem('validation-failed', `invalid: ${message}`, {
          errors: [{ location: 'body.path', message, value: body.path }],
        });
      }
      const name = body.name ?? declaredCityName(path, config);
      if (!CITY_NAME_PATTERN.test(name)) {
        const message = `${JSON.stringify(name)} cannot name a city; pass a name`;
        throw new Problem('validation-failed', `invalid: ${message}`, {
          errors: [{ location: 'body.name', message, value: name }],
        });
      }
      if (registry.pending.some((p) => p.path === path)) {
        throw new Problem('operation-in-progress', `conflict: an operation is already in progress for ${path}`);
      }
      const holder = registry.cityNamed(name);
      if (holder && holder.path !== path) {
        throw new Problem(
          'conflict-wrong-state',
          `conflict: city name ${name} is already registered for ${holder.path}`,
        );
      }
      const existing = registry.cityAt(path);
      if (existing && existing.name === name) return { created: false, city: this.info(name)! };
      try {
        await ensureRuntimeLayout(path);
      } catch (err) {
        const refused = refusedFor(err, path);
        if (refused) throw directoryProblem(refused, 'body.path', body.path);
        throw err;
      }
      await registry.update((draft) => {
        draft.cities = draft.cities.filter((c) => c.path !== path);
        draft.cities.push({ name, path, stopped: false });
      });
      await this.recordLifecycle(name, path, 'city.registered');
      this.o.reconciler.wake();
      return { created: existing === undefined, city: this.info(name)! };
    });
  }

  unregister(name: string): Promise<AsyncAcceptedResponse> {
    return this.serialised(async () => {
      const { registry } = this.o;
      const city = registry.cityNamed(name);
      if (!city) throw new Problem('city-not-found', `not_found: city not registered with supervisor: ${name}`);
      if (registry.pending.some((p) => p.path === city.path)) {
        throw new Problem('operation-in-progress', `conflict: an operation is already in progress for city ${name}`);
      }
      const cursor = this.o.events.captureCursor();
      const pending: PendingRequest = {
        request_id: newAsyncRequestId(),
        operation: 'city.unregister',
        name,
        path: city.path,
        supervisor_seq: cursor.get('__supervisor__') ?? 0,
        accepted_at: new Date().toISOString(),
      };
      await this.recordLifecycle(name, city.path, 'city.unregister_requested', true);
      await registry.update((draft) => {
        draft.cities = draft.cities.filter((c) => c.path !== city.path);
        draft.pending.push(pending);
      });
      this.o.reconciler.wake();
      return { request_id: pending.request_id, event_cursor: formatCursor(cursor) };
    });
  }

  async stop(name: string): Promise<CityInfo> {
    const city = await this.serialised(async () => {
      const registered = this.requireRegistered(name);
      if (!registered.stopped) {
        await this.o.registry.update((draft) => {
          const entry = draft.cities.find((c) => c.path === registered.path);
          if (entry) entry.stopped = true;
        });
      }
      return registered;
    });
    const { reconciler } = this.o;
    reconciler.wake();
    // A city whose shutdown_timeout is longer than the usual grace is waited for that long.
    const timeoutMs = Math.max(this.o.stopTimeoutMs, reconciler.stopGraceOf(city.path) + 2_000);
    const stopped = await reconciler.waitFor(() => !reconciler.hasController(city.path), timeoutMs);
    if (!stopped) {
      throw new Problem('gateway-timeout', `timeout: the controller of ${name} did not stop in time`);
    }
    return this.info(name) ?? { name, path: city.path, running: false, status: 'stopped' };
  }

  async start(name: string): Promise<CityInfo> {
    const city = await this.serialised(async () => {
      const registered = this.requireRegistered(name);
      if (registered.stopped) {
        await this.o.registry.update((draft) => {
          const entry = draft.cities.find((c) => c.path === registered.path);
          if (entry) entry.stopped = false;
        });
      }
      return registered;
    });
    const { reconciler } = this.o;
    const failuresBefore = reconciler.failedStarts(city.path);
    reconciler.startNow(city.path);
    const settled = await reconciler.waitFor(
      () =>
        reconciler.isRunning(city.path) ||
        (!reconciler.hasController(city.path) && reconciler.failedStarts(city.path) > failuresBefore),
      this.o.startTimeoutMs,
    );
    const current = this.info(name);
    if (reconciler.isRunning(city.path)) return current!;
    if (settled) {
      throw new Problem(
        'service-unavailable',
        `start_failed: ${name}: ${current?.error ?? 'controller failed to start'}`,
      );
    }
    throw new Problem(
      'gateway-timeout',
      `timeout: ${name} did not become ready within ${this.o.startTimeoutMs / 1000}s (status: ${current?.status ?? 'unknown'})`,
    );
  }

  /**
   * Where a requested city directory really is, or a 422 naming the rule it breaks (decisions.md): resolved
   * against the supervisor user's home, symbolic links followed, never blocking the event loop.
   * `registering` lets a directory already registered be registered again (under a new name).
   */
  private async placeCity(
    input: string,
    location: string,
    options: { registering?: boolean } = {},
  ): Promise<ResolvedDirectory> {
    try {
      const resolved = await resolveDirectory(input, homedir());
      const known: KnownCity[] = this.o.registry.cities.map((c) => ({ name: c.name, path: c.path }));
      for (const p of this.o.registry.pending) {
        if (!known.some((c) => c.path === p.path)) known.push({ name: p.name, path: p.path });
      }
      const self = options.registering ? resolved.path : undefined;
      checkPlacement(resolved.path, this.o.home, known, self);
      return resolved;
    } catch (err) {
      if (err instanceof DirectoryRefused) throw directoryProblem(err, location, input);
      throw err;
    }
  }

  /** A registered city with no asynchronous request in flight (start and stop would race its outcome). */
  private requireRegistered(name: string) {
    const city = this.o.registry.cityNamed(name);
    if (!city) throw new Problem('city-not-found', `not_found: city not registered with supervisor: ${name}`);
    if (this.o.registry.pending.some((p) => p.path === city.path)) {
      throw new Problem('operation-in-progress', `conflict: an operation is already in progress for city ${name}`);
    }
    return city;
  }

  /**
   * Records a lifecycle event in the city's own log; with `orInOurs`, in the supervisor's log when the city's
   * is gone with its directory (an unregister of a city whose directory vanished must still be possible).
   */
  private async recordLifecycle(
    name: string,
    path: string,
    type: 'city.created' | 'city.registered' | 'city.unregister_requested',
    orInOurs = false,
  ): Promise<void> {
    const payload: CityLifecyclePayload = { name, path };
    try {
      await cityLog(path).append({ type, actor: 'api', subject: name, payload });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (!orInOurs || (code !== 'ENOENT' && code !== 'ENOTDIR')) throw err;
      const message = `the city directory ${path} no longer exists; recorded in the supervisor's log`;
      await this.o.supervisorLog.append({ type, actor: 'api', subject: name, message, payload });
    }
  }

  private serialised<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

/** A 422 naming the placement rule a directory broke. */
function directoryProblem(refused: DirectoryRefused, location: string, value: string): Problem {
  const message = `${refused.message} (rule: ${refused.rule})`;
  return new Problem('validation-failed', `invalid: cannot use this directory for a city: ${message}`, {
    errors: [{ location, message, value }],
  });
}

/** A filesystem failure while scaffolding that says something about the directory (not our fault). */
function refusedFor(err: unknown, path: string): DirectoryRefused | undefined {
  if (err instanceof FsTimeoutError) {
    return new DirectoryRefused('unresponsive', `the filesystem did not answer for ${path} within ${err.ms} ms`);
  }
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
    return new DirectoryRefused('not_writable', `${path} cannot be written (${code})`);
  }
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new DirectoryRefused('not_writable', `no space left to create ${path} (${code})`);
  }
  return undefined;
}

/** A city's `city.toml`, read without blocking the event loop: a FIFO or a hung mount is refused, not waited on. */
async function loadCityConfig(path: string): Promise<CityConfig> {
  try {
    const st = await bounded(`stat ${path}`, stat(path));
    if (!st.isFile()) throw new ConfigError(`${path} is not a regular file`);
    if (st.size > 1024 * 1024) throw new ConfigError(`${path} is larger than 1 MiB`);
    return parseCityConfig(await bounded(`read ${path}`, readFile(path, 'utf8')), path);
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw configReadError(err, path);
  }
}

function normaliseProfile(
  profile: NonNullable<CityCreateRequest['bootstrap_profile']>,
): 'k8s-cell' | 'single-host-compat' {
  return profile === 'single-host-compat' ? 'single-host-compat' : 'k8s-cell';
}
