import { EventEmitter } from 'node:events';
import type { AgentResponse } from '../../shared/dto/agents.js';
import type { CityInfo } from '../../shared/dto/cities.js';
import type { ReviewSummary } from '../../shared/dto/reviews.js';
import type { WireEvent, WireTaggedEvent } from '../../shared/dto/events.js';
import type { SessionResponse } from '../../shared/dto/sessions.js';
import { call } from '../_api.js';
import { CliError } from '../_errors.js';
import { listCities } from '../_scope.js';
import { readEvents } from '../_stream.js';
import type { Api } from '../_types.js';

// What `ctl top` shows, kept up to date from the event streams (the city's, or the supervisor's for every city):
// an event that changes what is shown reloads that city's agents and sessions once (events arriving meanwhile
// fold into the same reload); nothing is asked on a timer. No terminal code here: the view (./view.ts) draws it.

/** How many recent events are kept (the view shows as many as fit). */
const EVENTS_KEPT = 200;
/** How many of a city's agents and sessions are read (one page each). */
const PAGE = 500;
/** Events that arrive within this long of one another reload their city once. */
const RELOAD_COALESCE_MS = 150;

/** Event types after which a city's agents, sessions or pending reviews may look different. */
const RELOADS = /^(session\.|agent\.|controller\.|city\.|config\.|bead\.|review\.|request\.result\.session\.)/;

export interface CityView {
  info: CityInfo;
  agents: AgentResponse[];
  sessions: SessionResponse[];
  /** Its reviews waiting for a person (`pending`), oldest first: a page of them. */
  reviews: ReviewSummary[];
  /** How many are pending in all (past the page too). */
  reviewsPending: number;
  /** Why its agents and sessions could not be read (a city not running, a controller restarting). */
  problem?: string;
}

/** A session with the city it belongs to: the rows `top` selects among. */
export interface SessionRow {
  city: string;
  session: SessionResponse;
}

/** An agent with the city it belongs to: the rows `top` selects among when the agents have the focus. */
export interface AgentRow {
  city: string;
  agent: AgentResponse;
}

/** Agents in the order they are drawn: by city, then as the city lists them. */
export function agentRowsOf(cities: CityView[]): AgentRow[] {
  return cities.flatMap((c) => (c.problem ? [] : c.agents.map((agent) => ({ city: c.info.name, agent }))));
}

/**
 * The bead a row's work is: an agent's active bead; for a session of an agent, that agent's (the one it holds,
 * when it is the agent's only session working).
 */
export function heldBeadOf(cities: CityView[], row: SessionRow | AgentRow): string | undefined {
  if ('agent' in row) return row.agent.active_bead;
  if (row.session.kind !== 'agent') return undefined;
  const city = cities.find((c) => c.info.name === row.city);
  return city?.agents.find((a) => a.name === row.session.template)?.active_bead;
}

export type Connection = { state: 'connecting' } | { state: 'live' } | { state: 'reconnecting'; why: string };

export interface TopState {
  cities: CityView[];
  /** Oldest first. Events of the supervisor stream carry their city. */
  events: (WireEvent | WireTaggedEvent)[];
  connection: Connection;
}

/** Sessions waiting on a person first (oldest question first), then by city and most recent activity. */
export function sessionRows(cities: CityView[]): SessionRow[] {
  const rows = cities.flatMap((c) => c.sessions.map((session) => ({ city: c.info.name, session })));
  const waitingSince = (r: SessionRow) => r.session.pending?.created_at ?? '';
  const active = (r: SessionRow) => r.session.last_active ?? r.session.created_at;
  return rows.sort((a, b) => {
    const pa = a.session.pending ? 0 : 1;
    const pb = b.session.pending ? 0 : 1;
    if (pa !== pb) return pa - pb;
    if (pa === 0) return waitingSince(a).localeCompare(waitingSince(b));
    return a.city.localeCompare(b.city) || active(b).localeCompare(active(a));
  });
}

export class TopModel extends EventEmitter<{ change: [] }> {
  state: TopState = { cities: [], events: [], connection: { state: 'connecting' } };
  private readonly stop = new AbortController();
  private readonly reloads = new Map<string, NodeJS.Timeout>();
  private reopened = false;

  /** `city`: the one city shown; undefined: every registered city, through the supervisor's stream. */
  constructor(
    readonly api: Api,
    readonly city: CityInfo | undefined,
  ) {
    super();
  }

  /** Reads everything once, then follows the stream until `close()`; a first read that fails is a CliError. */
  async start(): Promise<void> {
    const after = await this.loadAll();
    void this.follow(after).catch((err: unknown) => {
      // A stream that cannot exist (the city was unregistered): said on the screen, as a reconnect would be.
      this.setConnection({ state: 'reconnecting', why: (err as Error).message });
    });
  }

  close(): void {
    this.stop.abort();
    for (const timer of this.reloads.values()) clearTimeout(timer);
    this.reloads.clear();
  }

  /** Cities, their agents and sessions, and the recent events; returns the stream position they were read at. */
  private async loadAll(): Promise<string> {
    const { api } = this;
    let position: string;
    let events: (WireEvent | WireTaggedEvent)[];
    if (this.city) {
      const { data, response } = await call(
        api,
        api.client.GET('/v0/city/{cityName}/events', {
          params: { path: { cityName: this.city.name }, query: { limit: EVENTS_KEPT } },
        }),
      );
      const index = response.headers.get('X-CTL-Index');
      if (index === null) throw new CliError('missing X-CTL-Index header');
      position = index;
      events = [...data.items].reverse();
    } else {
      const { data } = await call(api, api.client.GET('/v0/events', { params: { query: { limit: EVENTS_KEPT } } }));
      position = data.event_cursor;
      events = data.items;
    }
    const infos = this.city
      ? [(await listCities(api)).find((c) => c.name === this.city!.name) ?? this.city]
      : await listCities(api);
    const cities = await Promise.all(infos.map((info) => this.loadCity(info)));
    this.state = { ...this.state, cities, events };
    this.emit('change');
    return position;
  }

  private async loadCity(info: CityInfo): Promise<CityView> {
    const none = { agents: [], sessions: [], reviews: [], reviewsPending: 0 };
    if (!info.running) return { info, ...none, problem: info.error ?? 'not running' };
    const { api } = this;
    const path = { cityName: info.name };
    try {
      const [agents, sessions, reviews] = await Promise.all([
        call(api, api.client.GET('/v0/city/{cityName}/agents', { params: { path, query: { limit: PAGE } } })),
        call(api, api.client.GET('/v0/city/{cityName}/sessions', { params: { path, query: { limit: PAGE } } })),
        call(
          api,
          api.client.GET('/v0/city/{cityName}/reviews', {
            params: { path, query: { state: 'pending', limit: PAGE } },
          }),
        ),
      ]);
      return {
        info,
        agents: agents.data.items,
        sessions: sessions.data.items.filter((s) => s.state !== 'failed-create'),
        reviews: reviews.data.items,
        reviewsPending: reviews.data.total,
      };
    } catch (err) {
      return { info, ...none, problem: (err as Error).message };
    }
  }

  private async follow(after: string): Promise<void> {
    await readEvents(
      this.api,
      {
        city: this.city,
        after,
        reconnect: true,
        signal: this.stop.signal,
        note: (text) => {
          this.reopened = true;
          this.setConnection({ state: 'reconnecting', why: text });
        },
        opened: () => {
          this.setConnection({ state: 'live' });
          // What changed while the stream was away is read again (the missed events themselves are replayed).
          if (this.reopened) {
            this.reopened = false;
            void this.reloadEverything();
          }
        },
      },
      (envelope) => {
        this.take(envelope as unknown as WireEvent | WireTaggedEvent);
        return false;
      },
    );
  }

  private take(event: WireEvent | WireTaggedEvent): void {
    const events = [...this.state.events, event];
    this.state = { ...this.state, events: events.slice(-EVENTS_KEPT) };
    this.emit('change');
    const cityName = 'city' in event ? event.city : this.city?.name;
    if (!this.city && (event.type.startsWith('city.') || event.type.startsWith('controller.'))) {
      // A city registered, started or stopped: the list of cities itself changes.
      this.schedule('', () => this.reloadEverything());
    } else if (cityName && RELOADS.test(event.type)) {
      this.schedule(cityName, () => this.reloadCity(cityName));
    }
  }

  private schedule(key: string, reload: () => Promise<void>): void {
    if (this.reloads.has(key)) return;
    this.reloads.set(
      key,
      setTimeout(() => {
        this.reloads.delete(key);
        void reload();
      }, RELOAD_COALESCE_MS),
    );
  }

  private async reloadCity(name: string): Promise<void> {
    const current = this.state.cities.find((c) => c.info.name === name);
    if (!current || this.stop.signal.aborted) return;
    const fresh = await this.loadCity(current.info);
    this.state = { ...this.state, cities: this.state.cities.map((c) => (c.info.name === name ? fresh : c)) };
    this.emit('change');
  }

  private async reloadEverything(): Promise<void> {
    if (this.stop.signal.aborted) return;
    try {
      const listed = await listCities(this.api);
      const infos = this.city ? listed.filter((c) => c.name === this.city!.name) : listed;
      const cities = await Promise.all(infos.map((info) => this.loadCity(info)));
      this.state = { ...this.state, cities };
      this.emit('change');
    } catch (err) {
      this.setConnection({ state: 'reconnecting', why: (err as Error).message });
    }
  }

  private setConnection(connection: Connection): void {
    this.state = { ...this.state, connection };
    this.emit('change');
  }
}
