import { spawnSync } from 'node:child_process';
import { ctlEntryPath } from '../../shared/paths.js';
import { call, CSRF } from '../_api.js';
import type { Api } from '../_types.js';
import { browserCommand, openWith } from '../commands/ui.js';
import type { Bead } from '../../shared/dto/beads.js';
import type { AgentRow, SessionRow } from './model.js';

// What `ctl top`'s keys do: each one a request of the public API, or another `ctl` command run in the terminal.
// Each resolves with one line for the person (what happened, or why not).

export type Answer = 'allow' | 'deny' | 'answer';

/** Answers the request the row's session is waiting on (that request, not whatever is pending by then). */
export async function respond(api: Api, row: SessionRow, action: Answer, text?: string): Promise<string> {
  const pending = row.session.pending;
  if (!pending) return `${row.session.id} is not waiting on anything`;
  await call(
    api,
    api.client.POST('/v0/city/{cityName}/session/{id}/respond', {
      params: { header: CSRF, path: { cityName: row.city, id: row.session.id } },
      body: { action, request_id: pending.request_id, ...(text ? { text } : {}) },
    }),
  );
  return `${action === 'allow' ? 'Allowed' : action === 'deny' ? 'Denied' : 'Answered'} ${pending.request_id} of ${row.session.id}`;
}

/** The dashboard page of a session, or of an agent: `/ui/city/{city}/session/{id}`, `/ui/city/{city}/agent/{name}`. */
export function pageOf(row: SessionRow | AgentRow): string {
  const city = `/ui/city/${encodeURIComponent(row.city)}`;
  return 'session' in row
    ? `${city}/session/${encodeURIComponent(row.session.id)}`
    : `${city}/agent/${encodeURIComponent(row.agent.name)}`;
}

/** The run a bead is part of (a step's root, or the run's root itself), if any. */
export function runOf(bead: Bead): string | undefined {
  return bead.metadata?.['ctl.root_bead_id'] ?? (bead.metadata?.['ctl.kind'] === 'workflow' ? bead.id : undefined);
}

/**
 * The page of the run the row's work is part of: the bead its agent holds now (for a session, its agent's).
 * Where that is no run's, the city's runs page, and the outcome says why.
 */
export async function openRun(api: Api, row: SessionRow | AgentRow, held: string | undefined): Promise<string> {
  const runs = `/ui/city/${encodeURIComponent(row.city)}/runs`;
  const who = 'session' in row ? row.session.id : row.agent.name;
  if (held === undefined) return openPage(api, runs, `${who} holds no bead; `);
  const { data } = await call(
    api,
    api.client.GET('/v0/city/{cityName}/bead/{id}', { params: { path: { cityName: row.city, id: held } } }),
  );
  const run = runOf(data);
  if (run === undefined) return openPage(api, runs, `${held} is not part of a run; `);
  return openPage(api, `${runs}/${encodeURIComponent(run)}`);
}

/**
 * A dashboard page in the browser, signed in as us (a one-time code landing on the page); where no browser can be
 * opened, the link to open within a minute. `note` leads the outcome (why this page rather than another).
 */
export async function openPage(api: Api, page: string, note = ''): Promise<string> {
  const { data } = await call(api, api.client.POST('/v0/auth/codes', { params: { header: CSRF } }));
  const url = new URL(`${data.url}&to=${encodeURIComponent(page)}`, `${api.base}/`).toString();
  const browser = browserCommand();
  if (browser && (await openWith(browser, url))) return `${note}Opened ${api.base}${page} in the browser`;
  return `${note}Open within a minute (once): ${url}`;
}

/**
 * `ctl session attach`, on this terminal until it detaches; `ctl top` has handed the terminal over meanwhile.
 * Its complaint (no terminal to join, tmux missing) is what it says on stderr.
 */
export function attach(api: Api, row: SessionRow): string {
  const result = spawnSync(
    process.execPath,
    [ctlEntryPath(), 'session', 'attach', row.session.id, '--city', row.city, '--api', api.base],
    { stdio: ['inherit', 'inherit', 'pipe'], encoding: 'utf8' },
  );
  if (result.error) return `cannot run ctl session attach: ${result.error.message}`;
  const complaint = result.stderr.trim().split('\n').pop();
  if (result.status !== 0) return complaint || `ctl session attach exited with status ${result.status}`;
  return `Back from ${row.session.id}`;
}
