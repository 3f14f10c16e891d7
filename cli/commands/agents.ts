import type { AgentResponse, OutputTurn } from '../../shared/dto/agents.js';
import { call, CSRF } from '../_api.js';
import { command, group } from '../_command.js';
import { CliError } from '../_errors.js';
import { inCityFlags, keyValues, limitFlag, listLimit } from '../_flags.js';
import { exitWhenReaderLeaves, fields, json, line, noteMore, progress, table } from '../_output.js';
import { modelFields, turnLine } from '../_views.js';
import { collectPages } from '../_pages.js';
import { cityPath, inCity } from '../_scope.js';
import { readEvents } from '../_stream.js';
import type { Column } from '../_types.js';

const nameArg = {
  name: { type: 'positional', description: 'Agent name (rig agents: RIG/NAME)', required: true, complete: 'agents' },
} as const;

const AGENT_COLUMNS: Column<AgentResponse>[] = [
  { header: 'NAME', value: (a) => a.name, kind: 'id' },
  { header: 'STATE', value: (a) => (a.available ? a.state : 'unavailable'), kind: 'status' },
  { header: 'SESSIONS', value: (a) => `${a.session_count} (${a.min_active_sessions}–${a.max_active_sessions})` },
  { header: 'PROVIDER', value: (a) => a.provider ?? '', kind: 'id' },
  { header: 'BEAD', value: (a) => a.active_bead ?? '', kind: 'id' },
  { header: 'QUEUED', value: (a) => (a.queued_work ? String(a.queued_work) : '') },
  {
    header: 'NOTE',
    value: (a) =>
      a.unavailable_reason ?? a.wait_reason ?? (a.restart_pending ? 'restarts once idle (configuration changed)' : ''),
    kind: 'text',
  },
];

/** `rig/name` as the API's path: `/agent/{base}` or `/agent/{dir}/{base}`. */
function agentPath(name: string): { dir?: string; base: string } {
  const parts = name.split('/');
  if (parts.length > 2 || parts.some((p) => p === ''))
    throw new CliError(`${name} is not an agent name (NAME or RIG/NAME)`);
  return parts.length === 2 ? { dir: parts[0], base: parts[1]! } : { base: parts[0]! };
}

const list = command({
  name: 'list',
  description: 'Agents: their state, sessions, work and what holds them back',
  examples: ['ctl agent list', 'ctl agent list --running', 'ctl agent list --json | jq -r ".items[].name"'],
  args: {
    running: { type: 'boolean', description: 'Only agents with a running session (--no-running: only those without)' },
    rig: { type: 'string', description: 'Only the agents of this rig' },
    peek: { type: 'boolean', description: "Read each running terminal program's screen for its latest output" },
    ...limitFlag,
    ...inCityFlags,
  },
  async run({ args: a }) {
    const limit = listLimit(a.limit);
    const { api, city } = await inCity(a);
    const body = await collectPages(limit, async (size, cursor) => {
      const { data } = await call(
        api,
        api.client.GET('/v0/city/{cityName}/agents', {
          params: {
            path: cityPath(city),
            query: {
              ...(a.running !== undefined ? { running: a.running } : {}),
              ...(a.rig !== undefined ? { rig: a.rig } : {}),
              ...(a.peek ? { peek: true } : {}),
              limit: size,
              ...(cursor ? { cursor } : {}),
            },
          },
        }),
      );
      return data;
    });
    if (a.json) return json(body);
    if (body.items.length === 0) return line('No agents. Add one with "ctl agent add NAME --provider PROVIDER".');
    table(AGENT_COLUMNS, body.items);
    noteMore(body.items.length, body.total);
  },
});

const show = command({
  name: 'show',
  description: 'One agent: its state, session, work and latest output',
  examples: ['ctl agent show worker', 'ctl agent show frontend/reviewer --json'],
  args: { ...nameArg, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { dir, base } = agentPath(a.name);
    const { data } = dir
      ? await call(
          api,
          api.client.GET('/v0/city/{cityName}/agent/{dir}/{base}', {
            params: { path: { ...cityPath(city), dir, base } },
          }),
        )
      : await call(
          api,
          api.client.GET('/v0/city/{cityName}/agent/{base}', { params: { path: { ...cityPath(city), base } } }),
        );
    if (a.json) return json(data);
    fields([
      ['Name', data.name],
      ['State', data.available ? data.state : `unavailable: ${data.unavailable_reason}`],
      ['Provider', data.provider],
      ['Description', data.description],
      [
        'Sessions',
        `${data.session_count} open (keeps ${data.min_active_sessions}, at most ${data.max_active_sessions})`,
      ],
      ['Session', data.session ? `${data.session.name}${data.session.attached ? ' (attached)' : ''}` : undefined],
      ['Activity', data.activity],
      ...modelFields({ ...data, options: data.option_defaults }),
      ['Bead', data.active_bead],
      ['Queued work', data.queued_work ? String(data.queued_work) : undefined],
      ['Waiting', data.wait_reason],
      ['Restart', data.restart_pending ? 'pending: it restarts once idle (its configuration changed)' : undefined],
      ['Declared in', data.source],
    ]);
    if (data.last_output) process.stdout.write(`\n${data.last_output.replace(/\n?$/, '\n')}`);
  },
});

const add = command({
  name: 'add',
  description: "Add an agent to the city's city.toml; the controller starts it at once",
  examples: [
    'ctl agent add worker --provider claude',
    'ctl agent add builder --provider codex --max 3 --min 0 --idle-timeout 5m',
  ],
  args: {
    ...nameArg,
    provider: { type: 'string', description: 'The provider its sessions run', required: true },
    dir: { type: 'string', description: 'The rig it belongs to (it is then RIG/NAME)' },
    description: { type: 'string', description: 'What it is for' },
    prompt: { type: 'string', description: 'The text its sessions start with' },
    min: { type: 'string', description: 'Sessions always kept (default 1; 0 for a pool that starts on work)' },
    max: { type: 'string', description: 'Sessions at most (default 1)' },
    'idle-timeout': { type: 'string', description: 'An idle session sleeps after this long (30s, 5m, …)' },
    suspended: { type: 'boolean', description: 'Add it suspended' },
    ...inCityFlags,
  },
  async run({ args: a }) {
    const count = (flag: string, value: string | undefined) => {
      if (value === undefined) return undefined;
      if (!/^\d+$/.test(value)) throw new CliError(`--${flag} must be a whole number, not ${value}`);
      return Number(value);
    };
    const { api, city } = await inCity(a);
    const min = count('min', a.min);
    const max = count('max', a.max);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/agents', {
        params: { header: CSRF, path: cityPath(city) },
        body: {
          name: a.name,
          provider: a.provider,
          ...(a.dir !== undefined ? { dir: a.dir } : {}),
          ...(a.description !== undefined ? { description: a.description } : {}),
          ...(a.prompt !== undefined ? { prompt: a.prompt } : {}),
          ...(min !== undefined ? { min_active_sessions: min } : {}),
          ...(max !== undefined ? { max_active_sessions: max } : {}),
          ...(a['idle-timeout'] !== undefined ? { idle_timeout: a['idle-timeout'] } : {}),
          ...(a.suspended ? { suspended: true } : {}),
        },
      }),
    );
    if (a.json) return json(data);
    line(`Added agent ${data.agent}`);
  },
});

const remove = command({
  name: 'remove',
  description: 'Remove an agent from city.toml; its sessions finish their turn, then close',
  examples: ['ctl agent remove worker'],
  args: { ...nameArg, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { dir, base } = agentPath(a.name);
    const params = { header: CSRF, path: { ...cityPath(city), base } };
    const { data } = dir
      ? await call(
          api,
          api.client.DELETE('/v0/city/{cityName}/agent/{dir}/{base}', {
            params: { ...params, path: { ...params.path, dir } },
          }),
        )
      : await call(api, api.client.DELETE('/v0/city/{cityName}/agent/{base}', { params }));
    if (a.json) return json(data);
    line(`Removed agent ${a.name}`);
  },
});

function action(name: 'suspend' | 'resume') {
  return command({
    name,
    description:
      name === 'suspend'
        ? 'Suspend an agent: its sessions finish their turn, then stop, and none starts (written to its config)'
        : 'Resume a suspended agent (and give a quarantined session another try)',
    examples: [
      `ctl agent ${name} worker`,
      `ctl agent ${name} worker --if-token TOKEN   # TOKEN: ctl agent suspension worker`,
    ],
    args: {
      ...nameArg,
      'if-token': {
        type: 'string',
        description: 'Only if the agent is unchanged since this token was read (ctl agent suspension NAME)',
        valueHint: 'TOKEN',
      },
      ...inCityFlags,
    },
    async run({ args: a }) {
      const { api, city } = await inCity(a);
      const { dir, base } = agentPath(a.name);
      if (a['if-token'] !== undefined) {
        const suspended = name === 'suspend';
        const body = { expected_token: a['if-token'], suspended };
        const { data } = dir
          ? await call(
              api,
              api.client.PUT('/v0/city/{cityName}/agent-suspension/{dir}/{base}', {
                params: { header: CSRF, path: { ...cityPath(city), dir, base } },
                body,
              }),
            )
          : await call(
              api,
              api.client.PUT('/v0/city/{cityName}/agent-suspension/{base}', {
                params: { header: CSRF, path: { ...cityPath(city), base } },
                body,
              }),
            );
        if (a.json) return json(data);
        // A stale token is the API's 409, the CLI's error line; already in that state, nothing was written.
        if (data.already_desired) return line(`Agent ${a.name} was already ${suspended ? 'suspended' : 'resumed'}`);
        return line(`${suspended ? 'Suspended' : 'Resumed'} agent ${a.name}`);
      }
      const path = { ...cityPath(city), base, action: name };
      const { data } = dir
        ? await call(
            api,
            api.client.POST('/v0/city/{cityName}/agent/{dir}/{base}/{action}', {
              params: { header: CSRF, path: { ...path, dir } },
            }),
          )
        : await call(
            api,
            api.client.POST('/v0/city/{cityName}/agent/{base}/{action}', { params: { header: CSRF, path } }),
          );
      if (a.json) return json(data);
      line(name === 'suspend' ? `Suspended agent ${a.name}` : `Resumed agent ${a.name}`);
    },
  });
}

const suspension = command({
  name: 'suspension',
  description: 'Whether an agent is to be suspended, and its content token (for suspend/resume --if-token)',
  examples: ['ctl agent suspension worker', 'ctl agent suspension review/worker --json'],
  args: { ...nameArg, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { dir, base } = agentPath(a.name);
    const { data } = dir
      ? await call(
          api,
          api.client.GET('/v0/city/{cityName}/agent-suspension/{dir}/{base}', {
            params: { path: { ...cityPath(city), dir, base } },
          }),
        )
      : await call(
          api,
          api.client.GET('/v0/city/{cityName}/agent-suspension/{base}', {
            params: { path: { ...cityPath(city), base } },
          }),
        );
    if (a.json) return json(data);
    fields([
      ['Agent', data.agent],
      ['Suspended', data.suspended ? 'yes' : 'no'],
      ['Token', data.token],
    ]);
  },
});

const output = command({
  name: 'output',
  description: "An agent's conversation (its running session's, else its latest); --follow keeps reading",
  examples: ['ctl agent output worker', 'ctl agent output worker --follow', 'ctl agent output worker --tail 20 --json'],
  args: {
    ...nameArg,
    tail: { type: 'string', description: 'How many transcript entries (default 100)' },
    follow: { type: 'boolean', description: 'Go on printing turns as they come, across restarts of its sessions' },
    ...inCityFlags,
  },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { dir, base } = agentPath(a.name);
    if (a.tail !== undefined && !/^\d+$/.test(a.tail))
      throw new CliError(`--tail must be a whole number, not ${a.tail}`);
    if (a.follow) {
      exitWhenReaderLeaves();
      const path = `/agent/${dir ? `${encodeURIComponent(dir)}/` : ''}${encodeURIComponent(base)}/output/stream`;
      const people = !a.json;
      await readEvents(
        api,
        { city, after: '', reconnect: true, note: progress, other: { path, frames: ['turn'] } },
        (envelope) => {
          const turns = (envelope.turns ?? []) as OutputTurn[];
          for (const turn of turns) line(people ? turnLine(turn) : JSON.stringify(turn));
          return false;
        },
      );
      return;
    }
    const query = a.tail !== undefined ? { tail: Number(a.tail) } : {};
    const { data } = dir
      ? await call(
          api,
          api.client.GET('/v0/city/{cityName}/agent/{dir}/{base}/output', {
            params: { path: { ...cityPath(city), dir, base }, query },
          }),
        )
      : await call(
          api,
          api.client.GET('/v0/city/{cityName}/agent/{base}/output', {
            params: { path: { ...cityPath(city), base }, query },
          }),
        );
    if (a.json) return json(data);
    if (data.turns.length === 0) return line(`${data.agent} has said nothing yet.`);
    for (const turn of data.turns) line(turnLine(turn));
  },
});

export const agentCommand = group({
  name: 'agent',
  description: 'Agents: the workers a city keeps running and routes work to',
  examples: ['ctl agent list', 'ctl agent add worker --provider claude', 'ctl agent output worker --follow'],
  commands: { list, show, add, remove, suspend: action('suspend'), resume: action('resume'), suspension, output },
});

export const slingCommand = command({
  name: 'sling',
  description:
    'Route work to an agent or a session: a bead, several, a convoy’s open members, free text made a bead, or a run of a formula',
  examples: [
    'ctl sling worker alp-12',
    'ctl sling worker alp-12 alp-13 alp-14   # several at once, one convoy',
    'ctl sling worker "fix the login redirect"   # text becomes a task bead',
    'echo "fix login" | ctl sling worker --stdin',
    'ctl sling worker-3 alp-12   # a session: handed the bead now',
    'ctl sling polecat alp-12 --rig web --merge mr --owned',
    'ctl sling reviewer alp-30 --no-convoy',
    'ctl sling worker --formula release --var version=1.2',
    'ctl sling worker alp-12 --json',
  ],
  args: {
    target: {
      type: 'positional',
      description: 'The agent (or pool), or an open session (id, name or alias)',
      required: true,
      complete: 'agents',
    },
    bead: {
      type: 'positional',
      description:
        'Bead or convoy ids (one or more), or text that becomes a bead (with --formula: the bead the run is for)',
      required: false,
      complete: 'beads',
      valueHint: 'BEAD…|TEXT',
    },
    formula: {
      type: 'string',
      description: 'Start a run of this formula, its work steps routed to the agent',
      valueHint: 'NAME',
      complete: 'formulas',
    },
    var: { type: 'string', description: 'A formula var (repeatable)', valueHint: 'NAME=VALUE', repeatable: true },
    text: { type: 'string', description: 'Make a task bead of this text and route it', valueHint: 'TEXT' },
    stdin: { type: 'boolean', description: 'Make a task bead of the text on stdin and route it' },
    rig: { type: 'string', description: 'The rig the target is in (a bare target is its agent)', valueHint: 'RIG' },
    merge: {
      type: 'string',
      description:
        'How the work gets into its base: direct, review, push, local or mr (stamped on the bead, told to the session)',
      valueHint: 'STRATEGY',
    },
    owned: { type: 'boolean', description: 'The convoy made for the work does not close by itself' },
    'no-formula': { type: 'boolean', description: 'Do not wrap the bead in the agent’s default formula' },
    'no-convoy': { type: 'boolean', description: 'Do not create a convoy tracking the bead' },
    reassign: { type: 'boolean', description: "Clear the bead's assignee so the agent can take it" },
    force: { type: 'boolean', description: 'Route a closed bead (it is reopened)' },
    ...inCityFlags,
  },
  variadic: true,
  async run({ args: a, all, rest }) {
    const words = a.bead ? [a.bead, ...rest] : rest;
    const vars = keyValues(all('var'), 'var');
    if (a.merge !== undefined && !['direct', 'review', 'push', 'local', 'mr'].includes(a.merge))
      throw new CliError(`--merge is direct, review, push, local or mr (got ${JSON.stringify(a.merge)})`);
    if (a.owned && a['no-convoy']) throw new CliError('--owned marks the convoy: it cannot go with --no-convoy');
    const text = a.stdin ? await stdinText() : a.text;
    if (text !== undefined && words.length) throw new CliError('give the work as beads or as text, not both');
    // One word that is no bead id (`alp-12`) is text; so is anything with a space in it.
    const isText = text === undefined && words.length === 1 && !/^[A-Za-z0-9]+-[A-Za-z0-9.]+$/.test(words[0]!);
    const work =
      text !== undefined || isText
        ? { text: text ?? words[0]! }
        : words.length > 1
          ? { beads: words }
          : words.length === 1
            ? { bead: words[0]! }
            : {};
    if (!('text' in work) && !('bead' in work) && !('beads' in work) && !a.formula)
      throw new CliError('a bead, text (or --formula NAME) is required');
    if (vars && !a.formula) throw new CliError('--var goes with --formula');
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/sling', {
        params: { header: CSRF, path: cityPath(city) },
        body: {
          target: a.target,
          ...work,
          ...(a.formula ? { formula: a.formula } : {}),
          ...(vars ? { vars } : {}),
          ...(a.rig ? { rig: a.rig } : {}),
          ...(a.merge ? { merge: a.merge as 'direct' | 'review' | 'push' | 'local' | 'mr' } : {}),
          ...(a.owned ? { owned: true } : {}),
          ...(a['no-formula'] ? { no_formula: true } : {}),
          ...(a['no-convoy'] ? { no_convoy: true } : {}),
          ...(a.reassign ? { reassign: true } : {}),
          ...(a.force ? { force: true } : {}),
        },
      }),
    );
    if (a.json) return json(data);
    if (data.created_bead) line(`Made bead ${data.created_bead} of the text`);
    if (data.mode === 'formula') {
      line(`Slung a run of ${data.formula} to ${data.target}: run ${data.root_bead_id} (${data.routed.length} steps)`);
      for (const warning of data.warnings ?? []) progress(`warning: ${warning}`);
      return;
    }
    const what =
      data.mode === 'convoy'
        ? `${data.routed.length} beads of convoy ${data.bead}`
        : data.routed.length > 1
          ? `${data.routed.length} beads (${data.routed.join(', ')})`
          : `bead ${data.routed[0] ?? data.bead}`;
    const to = data.mode === 'session' ? `session ${a.target} (${data.session_id})` : data.target;
    const convoy = data.workflow_id && data.mode !== 'convoy' ? ` (convoy ${data.workflow_id})` : '';
    line(`${data.mode === 'session' ? 'Handed' : 'Slung'} ${what} to ${to}${convoy}`);
    for (const warning of data.warnings ?? []) progress(`warning: ${warning}`);
  },
});

/** The text piped to `ctl sling --stdin` (a bead's description is not a file: 1 MiB at most, the API's limit). */
async function stdinText(): Promise<string> {
  if (process.stdin.isTTY) throw new CliError('--stdin reads the text from a pipe (stdin is a terminal)');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > 1024 * 1024) throw new CliError('the text on stdin is over 1 MiB');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
