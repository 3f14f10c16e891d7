import { setTimeout as sleep } from 'node:timers/promises';
import type { CityInfo } from '../shared/dto/cities.js';
import type { RequestFailedPayload, WireTaggedEvent } from '../shared/dto/events.js';
import { formatDuration } from '../shared/duration.js';
import { call } from './_api.js';
import { CliError } from './_errors.js';
import { progress } from './_output.js';
import { listCities } from './_scope.js';
import { readEvents } from './_stream.js';
import type { Api } from './_types.js';

// Waiting for what the supervisor does after it answers, on its event stream (the spec's recommended flow), never
// by polling: an asynchronous request's terminal event, or a registered city's first start.

/** Progress for people: a city's events as they pass (stderr, on a terminal). */
function showProgress(event: WireTaggedEvent): void {
  progress(`  ${event.type}${event.message ? `: ${event.message}` : ''}`);
}

function noteReconnect(text: string): void {
  progress(`  (${text})`);
}

/**
 * The terminal event of an asynchronous city request (`POST /v0/city`, `…/unregister`): read from the supervisor
 * stream after the 202's `event_cursor` until `request.result.<operation>` or `request.failed` carries its
 * `request_id`. A `request.failed`, or no outcome within `timeoutMs`, is a CliError.
 */
export async function requestOutcome(
  api: Api,
  o: {
    requestId: string;
    eventCursor: string;
    operation: 'city.create' | 'city.unregister';
    city: string;
    timeoutMs: number;
  },
): Promise<WireTaggedEvent> {
  const resultType = `request.result.${o.operation}`;
  const seen: { outcome?: WireTaggedEvent } = {};
  const signal = AbortSignal.timeout(o.timeoutMs);
  await readEvents(api, { after: o.eventCursor, reconnect: true, signal, note: noteReconnect }, (envelope) => {
    const event = envelope as unknown as WireTaggedEvent;
    const requestId = (event.payload as { request_id?: unknown } | undefined)?.request_id;
    if ((event.type === resultType || event.type === 'request.failed') && requestId === o.requestId) {
      seen.outcome = event;
      return true;
    }
    if (event.city === o.city) showProgress(event);
    return false;
  });
  const { outcome } = seen;
  if (!outcome) {
    throw new CliError(
      `no outcome of ${o.operation} for ${o.city} within ${formatDuration(o.timeoutMs)} (request ${o.requestId}); ` +
        `"ctl events --type ${resultType}" shows it when it comes`,
    );
  }
  if (outcome.type === 'request.failed') {
    const failed = outcome.payload as Partial<RequestFailedPayload>;
    throw new CliError(`${failed.error_message ?? 'request failed'} (${failed.error_code ?? 'error'})`);
  }
  return outcome;
}

/** Listed states in which a city will not come up by itself: it failed, or something holds it. */
const WILL_NOT_RUN = new Set(['init_failed', 'locked', 'directory_missing']);

/**
 * Waits until the registered city `name` runs, and answers it as listed then. From a cursor of every log taken
 * first, the city is looked up once (it may run already, or be stopped: answered at once), then its own events are
 * read from that cursor until `controller.started` — or `controller.crashed`, a failure. Nothing can pass
 * unseen between the look and the stream: what happened before the look, the look shows; what after, the stream.
 */
export async function cityRunning(api: Api, name: string, timeoutMs: number): Promise<CityInfo> {
  const { data } = await call(api, api.client.GET('/v0/events', { params: { query: { limit: 1 } } }));
  const city = await listedCity(api, name);
  if (city.running || city.status === 'stopped') return city;
  if (WILL_NOT_RUN.has(city.status ?? '')) throw new CliError(`${name} does not run: ${city.error ?? city.status}`);
  const seen: { crashed?: WireTaggedEvent; started?: WireTaggedEvent } = {};
  const signal = AbortSignal.timeout(timeoutMs);
  await readEvents(api, { after: data.event_cursor, reconnect: true, signal, note: noteReconnect }, (envelope) => {
    const event = envelope as unknown as WireTaggedEvent;
    if (event.city !== name) return false;
    showProgress(event);
    if (event.type === 'controller.crashed') seen.crashed = event;
    if (event.type === 'controller.started') seen.started = event;
    return seen.crashed !== undefined || seen.started !== undefined;
  });
  if (seen.crashed) throw new CliError(`${name} failed to start: ${seen.crashed.message ?? 'its controller exited'}`);
  if (!seen.started) throw new CliError(`${name} did not start within ${formatDuration(timeoutMs)}`);
  // A controller records controller.started just before it tells the supervisor it is ready, so the listing may
  // lag it by that one message: looked at again, briefly, until it says so too.
  for (let tries = 0; ; tries++) {
    const listed = await listedCity(api, name);
    if (listed.running || tries === 40) return listed;
    await sleep(25);
  }
}

async function listedCity(api: Api, name: string): Promise<CityInfo> {
  const city = (await listCities(api)).find((c) => c.name === name);
  if (!city) throw new CliError(`${name} is no longer registered`);
  return city;
}
