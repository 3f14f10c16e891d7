import { resolve } from 'node:path';
import type { RigResponse } from '../../shared/dto/rigs.js';
import { call, CSRF } from '../_api.js';
import { command, group } from '../_command.js';
import { CliError } from '../_errors.js';
import { duration, inCityFlags, timeoutFlag } from '../_flags.js';
import { readEvents } from '../_stream.js';
import { fields, json, line, progress, table } from '../_output.js';
import { cityPath, inCity } from '../_scope.js';

const nameArg = { name: { type: 'positional', description: 'Rig name', required: true } } as const;

function gitSummary(r: RigResponse): string {
  const g = r.git;
  if (!g) return '-';
  if (g.error) return `error: ${g.error}`;
  const distance = [g.ahead ? `↑${g.ahead}` : '', g.behind ? `↓${g.behind}` : ''].filter(Boolean).join(' ');
  const state = g.clean ? 'clean' : `${g.changed_files.length} changed`;
  return [g.branch ?? '(detached)', state, distance].filter(Boolean).join(' ');
}

const list = command({
  name: 'list',
  description: 'The city’s rigs: their directories, agents, and with --git their working trees',
  examples: ['ctl rig list', 'ctl rig list --git', 'ctl rig list --json'],
  args: { git: { type: 'boolean', description: 'Read each rig’s git status' }, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/rigs', {
        params: { path: cityPath(city), query: { limit: 1000, ...(a.git ? { git: true } : {}) } },
      }),
    );
    if (a.json) return json(data);
    if (data.items.length === 0) return line('No rigs (ctl rig add NAME PATH).');
    table<RigResponse>(
      [
        { header: 'NAME', value: (r) => r.name, kind: 'id' },
        {
          header: 'STATE',
          value: (r) => (r.suspended ? 'suspended' : r.present ? 'active' : 'missing'),
          kind: 'status',
        },
        { header: 'AGENTS', value: (r) => `${r.running_count}/${r.agent_count}` },
        ...(a.git ? [{ header: 'GIT', value: gitSummary }] : []),
        { header: 'PATH', value: (r) => r.path, kind: 'text' as const },
      ],
      data.items,
    );
  },
});

const add = command({
  name: 'add',
  description: 'Add a rig: an existing directory, or a repository cloned with --git-url (waits for the clone)',
  examples: [
    'ctl rig add frontend ~/src/frontend',
    'ctl rig add api ../api --prefix api --default-branch main',
    'ctl rig add docs --git-url https://example.com/docs.git',
  ],
  args: {
    ...nameArg,
    path: {
      type: 'positional',
      description: 'Its directory (it must exist; with --git-url: where to clone)',
      required: false,
    },
    'git-url': {
      type: 'string',
      description: 'Clone this repository (default place: rigs/<name> in the city)',
      valueHint: 'URL',
    },
    prefix: { type: 'string', description: 'Its prefix' },
    'default-branch': { type: 'string', description: 'Its mainline branch', valueHint: 'BRANCH' },
    ...timeoutFlag('How long to wait for a clone (default 30m)'),
    ...inCityFlags,
  },
  async run({ args: a }) {
    if (!a.path && !a['git-url']) throw new CliError('a directory (PATH) or --git-url is required');
    const timeoutMs = duration(a.timeout, 'timeout', 30 * 60_000);
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/rigs', {
        params: { header: CSRF, path: cityPath(city) },
        body: {
          name: a.name,
          // A path typed here is relative to where it is typed, not to the city.
          ...(a.path ? { path: resolve(a.path) } : {}),
          ...(a['git-url'] ? { git_url: a['git-url'] } : {}),
          ...(a.prefix ? { prefix: a.prefix } : {}),
          ...(a['default-branch'] ? { default_branch: a['default-branch'] } : {}),
        },
      }),
    );
    if (data.status === 'accepted') {
      const seen: { outcome?: Record<string, unknown> } = {};
      await readEvents(
        api,
        {
          city,
          after: data.event_cursor ?? '0',
          reconnect: true,
          signal: AbortSignal.timeout(timeoutMs),
          note: (t) => progress(`  (${t})`),
        },
        (envelope) => {
          const payload = (envelope.payload ?? {}) as { request_id?: string; detail?: string };
          if (payload.request_id !== data.request_id) return false;
          if (envelope.type === 'rig.provision.progress') progress(`  ${payload.detail ?? ''}`);
          if (envelope.type === 'request.result.rig.create' || envelope.type === 'request.failed') {
            seen.outcome = envelope;
            return true;
          }
          return false;
        },
      );
      if (!seen.outcome)
        throw new CliError(
          `the clone of ${a.name} did not end within ${a.timeout ?? '30m'} (request ${data.request_id})`,
        );
      if (seen.outcome.type === 'request.failed') {
        throw new CliError((seen.outcome.payload as { error_message?: string }).error_message ?? 'the clone failed');
      }
    }
    if (a.json) return json(data);
    const { data: rig } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/rig/{name}', { params: { path: { ...cityPath(city), name: a.name } } }),
    );
    line(`Added rig ${rig.name} at ${rig.path}`);
  },
});

function rigAction(name: 'remove' | 'suspend' | 'resume', description: string, done: string) {
  return command({
    name,
    description,
    examples: [`ctl rig ${name} frontend`],
    args: { ...nameArg, ...inCityFlags },
    async run({ args: a }) {
      const { api, city } = await inCity(a);
      const params = { header: CSRF, path: { ...cityPath(city), name: a.name } };
      const { data } =
        name === 'remove'
          ? await call(api, api.client.DELETE('/v0/city/{cityName}/rig/{name}', { params }))
          : name === 'suspend'
            ? await call(api, api.client.POST('/v0/city/{cityName}/rig/{name}/suspend', { params }))
            : await call(api, api.client.POST('/v0/city/{cityName}/rig/{name}/resume', { params }));
      if (a.json) return json(data);
      line(`${done} rig ${a.name}`);
    },
  });
}

const status = command({
  name: 'status',
  description: 'A rig: its directory, agents and git working tree',
  examples: ['ctl rig status frontend'],
  args: { ...nameArg, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/rig/{name}', {
        params: { path: { ...cityPath(city), name: a.name }, query: { git: true } },
      }),
    );
    if (a.json) return json(data);
    fields([
      ['Rig', data.name],
      ['Path', data.path + (data.present ? '' : ' (missing)')],
      ['Suspended', data.suspended ? 'yes' : 'no'],
      ['Agents', `${data.running_count} running of ${data.agent_count}`],
      ['Prefix', data.prefix],
      ['Default branch', data.default_branch],
      ['Git', gitSummary(data)],
      ['Head', data.git?.head],
      ['Upstream', data.git?.upstream],
    ]);
    for (const file of data.git?.changed_files ?? []) line(`  ${file}`);
    // Sessions' own worktrees (agents with isolation = "worktree"): each branch against its base.
    if (data.worktrees?.length) line('Worktrees:');
    for (const w of data.worktrees ?? []) {
      const distance = [w.ahead ? `↑${w.ahead}` : '', w.behind ? `↓${w.behind}` : ''].filter(Boolean).join(' ');
      const state = w.error ? `error: ${w.error}` : [w.dirty ? 'dirty' : 'clean', distance].filter(Boolean).join(' ');
      line(`  ${w.session_name}  ${w.branch}  ${state}  ${w.path}`);
    }
  },
});

const overlaps = command({
  name: 'overlaps',
  description: 'Pairs of a rig’s sessions and waiting reviews whose branches changed the same files, read now',
  examples: ['ctl rig overlaps frontend', 'ctl rig overlaps frontend --json'],
  args: { ...nameArg, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/rigs/{name}/overlaps', {
        params: { path: { ...cityPath(city), name: a.name }, query: { limit: 1000 } },
      }),
    );
    if (a.json) return json(data);
    const reviews = data.reviews_checked
      ? ` and ${data.reviews_checked} review${data.reviews_checked === 1 ? '' : 's'}`
      : '';
    const checked = `${data.sessions_checked} worktree${data.sessions_checked === 1 ? '' : 's'}${reviews} read`;
    if (data.items.length === 0) line(`No overlaps in rig ${data.rig} (${checked}).`);
    else {
      table<(typeof data.items)[number]>(
        [
          { header: 'SESSIONS', value: (o) => o.parties.map(sideLabel).join(' ↔ '), kind: 'id' },
          { header: 'FILES', value: (o) => o.files.join(', '), kind: 'text' },
        ],
        data.items,
      );
    }
    for (const p of data.problems ?? []) {
      line(`could not read ${p.bead === undefined ? p.session : `the review of ${p.bead}`}: ${p.error}`);
    }
  },
});

/** One side of an overlap as a person reads it: a session's name, or the review of a bead and its session. */
function sideLabel(party: { kind: 'session' | 'review'; session: string; bead?: string }): string {
  return party.kind === 'review' ? `review of ${party.bead} (${party.session})` : party.session;
}

export const rigCommand = group({
  name: 'rig',
  description: 'Rigs: the project directories a city’s agents work in',
  examples: [
    'ctl rig add frontend ~/src/frontend',
    'ctl rig list --git',
    'ctl rig status frontend',
    'ctl rig overlaps frontend',
  ],
  commands: {
    list,
    add,
    remove: rigAction('remove', 'Remove a rig from city.toml (its directory is left as it is)', 'Removed'),
    suspend: rigAction('suspend', 'Suspend a rig: its agents finish their turn, then stop', 'Suspended'),
    resume: rigAction('resume', 'Resume a rig: its agents start again', 'Resumed'),
    status,
    overlaps,
  },
});
