import { setTimeout as sleep } from 'node:timers/promises';
import type { WireTaggedEvent } from '../shared/dto/events.js';
import { call, type Api } from './_api.js';
import { CliError } from './_command.js';
import { progress } from './_progress.js';
import { listCities } from './_scope.js';

const POLL_MS = 100;

/**
 * Waits for the terminal event (`request.result.<operation>` or `request.failed`) of an asynchronous request,
 * showing the city's startup phases as they pass. Resolves with the success event; a `request.failed` or the
 * deadline is a CliError.
 */
export async function waitForRequest(
  api: Api,
  requestId: string,
  operation: 'city.create' | 'city.unregister',
  city: string,
  timeoutMs: number,
): Promise<WireTaggedEvent> {
  const started = Date.now();
  const deadline = started + timeoutMs;
  const resultType = `request.result.${operation}`;
  let lastStatus = '';
  while (Date.now() < deadline) {
    for (const type of [resultType, 'request.failed']) {
      // Bounded by time so each poll reads only the recent end of the logs (with room for clock skew).
      const since = `${Math.ceil((Date.now() - started) / 1000) + 300}s`;
      const { data } = await call(
        api,
        api.client.GET('/v0/events', { params: { query: { type, since, limit: 200 } } }),
      );
      const event = data.items.find((e) => (e.payload as { request_id?: string }).request_id === requestId);
      if (event && event.type === 'request.failed') {
        const failed = event.payload as { error_message?: string; error_code?: string };
        throw new CliError(`${failed.error_message ?? 'request failed'} (${failed.error_code ?? 'error'})`);
      }
      if (event) return event;
    }
    if (operation === 'city.create') {
      const info = (await listCities(api)).find((c) => c.name === city);
      const status = info?.running ? 'running' : (info?.status ?? '');
      if (status && status !== lastStatus) {
        progress(`  ${status}${info?.error ? `: ${info.error}` : ''}`);
        lastStatus = status;
      }
    }
    await sleep(POLL_MS);
  }
  throw new CliError(`timed out after ${timeoutMs / 1000}s waiting for ${operation} of ${city} (request ${requestId})`);
}

/** Waits until the city is listed running; a start-up failure or the deadline is a CliError. */
export async function waitForRunning(api: Api, name: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastStatus = '';
  while (Date.now() < deadline) {
    const info = (await listCities(api)).find((c) => c.name === name);
    if (info?.running) return;
    if (info?.status === 'init_failed' || info?.status === 'restarting') {
      throw new CliError(`${name} failed to start: ${info.error ?? info.status}`);
    }
    const status = info?.status ?? '';
    if (status && status !== lastStatus) {
      progress(`  ${status}`);
      lastStatus = status;
    }
    await sleep(POLL_MS);
  }
  throw new CliError(`timed out after ${timeoutMs / 1000}s waiting for ${name} to run`);
}
