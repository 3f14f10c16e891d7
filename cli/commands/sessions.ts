import type { AsyncAcceptedBody, SessionResponse, SessionTurn, TranscriptEntry } from '../../shared/dto/sessions.js';
import type { RequestFailedPayload } from '../../shared/dto/events.js';
import { formatDuration } from '../../shared/duration.js';
import { idAction } from '../_action.js';
import { call, CSRF } from '../_api.js';
import { command, group } from '../_command.js';
import { CliError } from '../_errors.js';
import { inCityFlags, keyValues, limitFlag, listLimit, refuseTogether, timeout, timeoutFlag } from '../_flags.js';
import { colourOn, exitWhenReaderLeaves, fields, json, line, noteMore, paint, progress, table } from '../_output.js';
import { collectPages } from '../_pages.js';
import { agents } from './session-agents.js';
import { permissionMode } from './session-permission-mode.js';
import { reset } from './session-reset.js';
import { modelFields, turnLine } from '../_views.js';
import { cityPath, inCity } from '../_scope.js';
import { readEvents } from '../_stream.js';
import type { Api, Column } from '../_types.js';
import type { CityInfo } from '../../shared/dto/cities.js';

const idArg = {
  id: { type: 'positional', description: 'Session id, alias or session name', required: true, complete: 'sessions' },
} as const;
const waitFlag = timeoutFlag('How long to wait for the outcome (default 60s)');

const SESSION_COLUMNS: Column<SessionResponse>[] = [
  { header: 'ID', value: (s) => s.id, kind: 'id' },
  { header: 'NAME', value: (s) => s.alias ?? s.session_name, kind: 'id' },
  { header: 'TEMPLATE', value: (s) => s.template, kind: 'id' },
  { header: 'STATE', value: (s) => s.state, kind: 'status' },
  { header: 'HOST', value: (s) => s.host, kind: 'id' },
  { header: 'ACTIVITY', value: (s) => (s.pending ? 'waiting' : (s.activity ?? '')), kind: 'status' },
  { header: 'PID', value: (s) => (s.pid !== undefined ? String(s.pid) : '') },
  { header: 'TITLE', value: (s) => s.title, kind: 'text' },
];

/**
 * Waits on the city stream (from the 202's cursor) for the request's `request.result.*` or `request.failed`:
 * the spec's flow, no polling. A failure or no outcome in time is a CliError.
 */
async function outcome(
  api: Api,
  city: CityInfo,
  accepted: AsyncAcceptedBody,
  what: string,
  timeoutMs: number,
): Promise<Record<string, unknown>> {
  let found: Record<string, unknown> | undefined;
  await readEvents(
    api,
    { city, after: accepted.event_cursor, reconnect: true, signal: AbortSignal.timeout(timeoutMs), note: progress },
    (envelope) => {
      const payload = (envelope.payload ?? {}) as { request_id?: unknown };
      const type = String(envelope.type);
      if (payload.request_id !== accepted.request_id) return false;
      if (type !== 'request.failed' && !type.startsWith('request.result.')) return false;
      found = envelope;
      return true;
    },
  );
  if (!found) {
    throw new CliError(
      `no outcome of ${what} within ${formatDuration(timeoutMs)} (request ${accepted.request_id}); ` +
        `"ctl events --type request.failed" shows it when it comes`,
    );
  }
  if (found.type === 'request.failed') {
    const failed = found.payload as Partial<RequestFailedPayload>;
    throw new CliError(`${failed.error_message ?? 'failed'} (${failed.error_code ?? 'error'})`);
  }
  return (found.payload ?? {}) as Record<string, unknown>;
}

function describe(s: SessionResponse): string {
  return `${s.id} (${s.alias ?? s.session_name}) of ${s.provider}`;
}

const create = command({
  name: 'new',
  description: 'Create a session of a provider (or, with --agent, an agent) and wait until its program is ready',
  examples: [
    'ctl session new                        # the city’s default provider',
    'ctl session new claude --alias review --message "Look at alp-2"',
    'ctl session new helper --agent --no-wait --json',
    'ctl session new claude --model sonnet --option effort=high --option max_turns=20',
  ],
  args: {
    name: { type: 'positional', description: 'Provider (or agent) name', required: false },
    agent: { type: 'boolean', description: 'NAME is an agent of the city, not a provider' },
    alias: { type: 'string', description: 'Another name to address it by' },
    title: { type: 'string', description: 'Title' },
    message: { type: 'string', description: 'A first message, delivered once the program is ready' },
    'permission-mode': {
      type: 'string',
      description: "One of the provider's permission modes",
      field: 'permission_mode',
    },
    model: { type: 'string', description: 'The model (as --option model=NAME)', valueHint: 'NAME' },
    option: {
      type: 'string',
      description: 'An option the provider offers (repeatable): model, effort, max_turns, … (ctl provider show NAME)',
      valueHint: 'KEY=VALUE',
      repeatable: true,
      field: 'options',
    },
    wait: {
      type: 'boolean',
      description: 'Wait until its program is ready (default; --no-wait returns at once)',
      negatable: true,
    },
    ...waitFlag,
    ...inCityFlags,
  },
  async run({ args: a, all }) {
    const wait = timeout(a.timeout, 60_000);
    const options = { ...keyValues(all('option'), 'option') };
    if (a.model !== undefined) {
      if (options.model !== undefined && options.model !== a.model) {
        throw new CliError(`--model ${a.model} and --option model=${options.model} disagree`);
      }
      options.model = a.model;
    }
    const { api, city } = await inCity(a);
    const body = {
      ...(Object.keys(options).length > 0 ? { options } : {}),
      ...(a.name !== undefined ? { name: a.name } : {}),
      ...(a.agent ? { kind: 'agent' as const } : {}),
      ...(a.alias !== undefined ? { alias: a.alias } : {}),
      ...(a.title !== undefined ? { title: a.title } : {}),
      ...(a.message !== undefined ? { message: a.message } : {}),
      ...(a['permission-mode'] !== undefined ? { permission_mode: a['permission-mode'] } : {}),
    };
    const { data: accepted } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/sessions', { params: { header: CSRF, path: cityPath(city) }, body }),
    );
    if (a.wait !== false) await outcome(api, city, accepted, `creating session ${accepted.session_id}`, wait);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/session/{id}', {
        params: { path: { ...cityPath(city), id: accepted.session_id } },
      }),
    );
    if (a.json) return json(data);
    line(a.wait === false ? `Creating session ${describe(data)}` : `Session ${describe(data)} is ${data.state}`);
  },
});

const list = command({
  name: 'list',
  description:
    'Sessions, newest first: those not closed and not failed (--all for every one, --state STATE for one state)',
  examples: ['ctl session list', 'ctl session list --state asleep --template claude', 'ctl session list --all --json'],
  args: {
    state: { type: 'string', description: 'A state (active, asleep, suspended, failed-create, …), closed, or all' },
    all: { type: 'boolean', description: 'Every session, closed and failed ones too (as --state all)' },
    template: { type: 'string', description: 'Only sessions of this agent or provider' },
    ...limitFlag,
    ...inCityFlags,
  },
  async run({ args: a }) {
    const limit = listLimit(a.limit);
    refuseTogether(a, [['all', 'state']]);
    const state = a.all ? 'all' : a.state;
    const { api, city } = await inCity(a);
    const body = await collectPages(limit, async (size, cursor) => {
      const { data } = await call(
        api,
        api.client.GET('/v0/city/{cityName}/sessions', {
          params: {
            path: cityPath(city),
            query: {
              ...(state !== undefined ? { state: state as never } : {}),
              ...(a.template !== undefined ? { template: a.template } : {}),
              limit: size,
              ...(cursor ? { cursor } : {}),
            },
          },
        }),
      );
      return data;
    });
    // A session that could not start stays (its reason is worth reading) but is not one to work with: left out
    // of the default list, as closed ones are.
    const shown = state === undefined ? body.items.filter((s) => s.state !== 'failed-create') : body.items;
    const failed = body.items.length - shown.length;
    if (a.json) return json(state === undefined ? { ...body, items: shown, total: body.total - failed } : body);
    if (shown.length === 0) line('No sessions.');
    else table(SESSION_COLUMNS, shown);
    if (failed) progress(`(${failed} failed session${failed === 1 ? '' : 's'} not shown; --all shows them)`);
    noteMore(shown.length, body.total - failed);
  },
});

const show = command({
  name: 'show',
  description: 'One session: its state, program, activity, pending question and latest output',
  examples: ['ctl session show alp-7', 'ctl session show review --json'],
  args: { ...idArg, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data: s } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/session/{id}', { params: { path: { ...cityPath(city), id: a.id } } }),
    );
    if (a.json) return json(s);
    fields([
      ['ID', s.id],
      ['Name', s.session_name],
      ['Alias', s.alias],
      ['Title', s.title],
      ['Template', `${s.template} (${s.kind})`],
      ['Provider', s.provider],
      ['Host', s.host],
      ['State', s.state],
      ['Running', s.running ? `yes (pid ${s.pid})` : 'no'],
      ['Activity', s.activity],
      [
        'Program',
        s.program_status
          ? `${s.program_status.status} (${s.program_status.source === 'hooks' ? `its hooks: ${s.program_status.hook}` : 'its screen'})`
          : undefined,
      ],
      ['Attached', s.attached ? 'yes' : undefined],
      ['Permission mode', s.permission_mode],
      ...modelFields(s),
      ['Queued', s.queued ? String(s.queued) : undefined],
      ['Pending', s.pending ? `${s.pending.kind}: ${s.pending.prompt ?? ''} (${s.pending.request_id})` : undefined],
      ['Reason', s.reason],
      ['Created', s.created_at],
      ['Last active', s.last_active],
      ['Work dir', s.work_dir],
    ]);
    if (s.last_output) process.stdout.write(`\n${s.last_output.replace(/\n?$/, '\n')}`);
  },
});

const attach = command({
  name: 'attach',
  description: "Join a session's terminal (a session in tmux): detach with Ctrl-b d, the session goes on",
  examples: ['ctl session attach alp-7'],
  args: { ...idArg, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data: s } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/session/{id}', { params: { path: { ...cityPath(city), id: a.id } } }),
    );
    if (!s.attach) {
      throw new CliError(
        s.running
          ? `${s.id} has no terminal to join (its provider ${s.provider} does not run in tmux); ctl session stream ${s.id} follows it`
          : `${s.id} is not running (${s.state}); ctl session wake ${s.id} starts it`,
      );
    }
    if (a.json) return json(s.attach);
    if (!process.stdin.isTTY) throw new CliError('attach needs a terminal (stdin is not one)');
    // tmux itself, in this terminal (the supervisor listens on loopback only, so this is its machine): here, or
    // through ssh on the session's host.
    const { spawnSync } = await import('node:child_process');
    const [program, ...args] = s.attach.command;
    const result = spawnSync(program!, args, { stdio: 'inherit', env: { ...process.env, TMUX: '' } });
    if (result.error) throw new CliError(`cannot run ${program}: ${result.error.message}`);
    if (result.status !== 0) throw new CliError(`${program} exited with status ${result.status}`);
  },
});

/** `send` and `submit`: accepted (202), then delivered — waited for on the city stream unless --no-wait. */
function deliveryCommand(name: 'send' | 'submit') {
  const submit = name === 'submit';
  return command({
    name,
    description: submit
      ? 'Submit a message with an intent: follow_up (after the current turn) or interrupt_now (stop it first)'
      : 'Send a message; waits until the program has it (a dormant session wakes for it)',
    examples: submit
      ? [
          'ctl session submit alp-7 "and then the tests" --intent follow_up',
          'ctl session submit review "stop, do this" --intent interrupt_now',
        ]
      : ['ctl session send alp-7 "Fix the flaky test"', 'ctl session send review "status?" --no-wait --json'],
    args: {
      ...idArg,
      message: { type: 'positional', description: 'The message', required: true },
      ...(submit
        ? {
            intent: {
              type: 'enum',
              description: 'default, follow_up or interrupt_now',
              options: ['default', 'follow_up', 'interrupt_now'],
              valueHint: 'INTENT',
            },
          }
        : {}),
      wait: {
        type: 'boolean',
        description: 'Wait until it is delivered (default; --no-wait returns at once)',
        negatable: true,
      },
      ...waitFlag,
      ...inCityFlags,
    },
    async run({ args: a }) {
      const wait = timeout(a.timeout, 60_000);
      const { api, city } = await inCity(a);
      const path = { ...cityPath(city), id: a.id };
      const intent = (a as { intent?: 'default' | 'follow_up' | 'interrupt_now' }).intent;
      const { data: accepted } = submit
        ? await call(
            api,
            api.client.POST('/v0/city/{cityName}/session/{id}/submit', {
              params: { header: CSRF, path },
              body: { message: a.message, ...(intent ? { intent } : {}) },
            }),
          )
        : await call(
            api,
            api.client.POST('/v0/city/{cityName}/session/{id}/messages', {
              params: { header: CSRF, path },
              body: { message: a.message },
            }),
          );
      if (a.wait === false) {
        if (a.json) return json(accepted);
        return line(`Accepted for ${accepted.session_id} (request ${accepted.request_id})`);
      }
      const result = await outcome(api, city, accepted, `delivering to ${accepted.session_id}`, wait);
      if (a.json) return json(result);
      line(`Delivered ${String(result.message_id)} to ${accepted.session_id}`);
    },
  });
}

const transcript = command({
  name: 'transcript',
  description: "A session's transcript: its conversation (--raw: every entry as stored), newest entries",
  examples: [
    'ctl session transcript alp-7',
    'ctl session transcript review --tail 20',
    'ctl session transcript alp-7 --raw --json',
  ],
  args: {
    ...idArg,
    raw: { type: 'boolean', description: 'Every entry as stored (starts, exits, turn ends, frames)' },
    tail: { type: 'string', description: 'How many entries (default 100, at most 1000)', valueHint: 'N' },
    ...inCityFlags,
  },
  async run({ args: a }) {
    const tail = a.tail === undefined ? undefined : Number(a.tail);
    if (tail !== undefined && !(Number.isInteger(tail) && tail >= 0))
      throw new CliError(`invalid --tail ${a.tail}: not a count`);
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/session/{id}/transcript', {
        params: {
          path: { ...cityPath(city), id: a.id },
          query: { format: a.raw ? 'raw' : 'conversation', ...(tail !== undefined ? { tail } : {}) },
        },
      }),
    );
    if (a.json) return json(data);
    if (a.raw) {
      for (const entry of data.messages ?? []) line(`${entry.seq} ${entry.ts} ${entry.kind} ${entryText(entry)}`);
      return;
    }
    const turns = data.turns ?? [];
    if (turns.length === 0) return line('No conversation yet.');
    for (const turn of turns) line(turnLine(turn));
  },
});

function entryText(entry: TranscriptEntry): string {
  return typeof entry.text === 'string' ? entry.text : '';
}

const stream = command({
  name: 'stream',
  description: 'Follow a session as it talks: its turns (and activity, questions) as they happen',
  examples: ['ctl session stream alp-7', 'ctl session stream review --raw | jq .'],
  args: {
    ...idArg,
    raw: { type: 'boolean', description: 'Every transcript entry (message frames) instead of turns' },
    ...inCityFlags,
  },
  async run({ args: a }) {
    exitWhenReaderLeaves();
    const { api, city } = await inCity(a);
    const session = await call(
      api,
      api.client.GET('/v0/city/{cityName}/session/{id}', { params: { path: { ...cityPath(city), id: a.id } } }),
    );
    const id = session.data.id;
    const people = !a.json && process.stdout.isTTY === true;
    const frames = ['turn', 'message', 'activity', 'pending', 'pending_cleared'];
    await readEvents(
      api,
      {
        city,
        // No position: the server starts with the newest entries; a reconnect goes on from the last id seen.
        after: '',
        reconnect: true,
        note: progress,
        other: { path: `/session/${encodeURIComponent(id)}/stream${a.raw ? '?format=raw' : ''}`, frames },
      },
      (envelope, data, frame) => {
        if (!people) {
          line(JSON.stringify({ event: frame, data: envelope }));
          return false;
        }
        if (frame === 'turn') line(turnLine(envelope as unknown as SessionTurn));
        else if (frame === 'message')
          line(`${String(envelope.seq)} ${String(envelope.kind)} ${entryText(envelope as TranscriptEntry)}`);
        else if (frame === 'pending')
          line(paint(`? ${String(envelope.prompt ?? envelope.kind)} (ctl session respond ${id} …)`, 'yellow'));
        else if (frame === 'activity' && colourOn()) progress(`  ${String(envelope.activity)}`);
        return false;
      },
    );
  },
});

const respond = command({
  name: 'respond',
  description: 'Answer the question or permission request a session is waiting on',
  examples: [
    'ctl session respond alp-7 allow',
    'ctl session respond alp-7 deny --text "not on main"',
    'ctl session respond review answer --text "use the staging database"',
  ],
  args: {
    ...idArg,
    action: {
      type: 'positional',
      description: 'allow or deny (a permission request), answer (a question)',
      required: true,
    },
    text: { type: 'string', description: "The answer, or a denial's reason" },
    'request-id': {
      type: 'string',
      description: 'The interaction answered (default: the one pending)',
      field: 'request_id',
    },
    ...inCityFlags,
  },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/session/{id}/respond', {
        params: { header: CSRF, path: { ...cityPath(city), id: a.id } },
        body: {
          action: a.action,
          ...(a.text !== undefined ? { text: a.text } : {}),
          ...(a['request-id'] !== undefined ? { request_id: a['request-id'] } : {}),
        },
      }),
    );
    if (a.json) return json(data);
    line(`Answered ${data.request_id} of ${data.id}: ${a.action}`);
  },
});

const pending = command({
  name: 'pending',
  description: "Questions and permission requests waiting for an answer: the city's, or one session's",
  examples: ['ctl session pending', 'ctl session pending alp-7 --json'],
  args: {
    id: { type: 'positional', description: 'Session id, alias or session name', required: false, complete: 'sessions' },
    ...inCityFlags,
  },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    if (a.id !== undefined) {
      const { data } = await call(
        api,
        api.client.GET('/v0/city/{cityName}/session/{id}/pending', {
          params: { path: { ...cityPath(city), id: a.id } },
        }),
      );
      if (a.json) return json(data);
      if (!data.pending)
        return line(data.supported ? 'Nothing pending.' : 'Nothing pending (its provider does not ask).');
      return fields([
        ['Request', data.pending.request_id],
        ['Kind', data.pending.kind],
        ['Prompt', data.pending.prompt],
        ['Answers', data.pending.options?.join(', ')],
      ]);
    }
    const body = await collectPages(1000, async (size, cursor) => {
      const { data } = await call(
        api,
        api.client.GET('/v0/city/{cityName}/pending', {
          params: { path: cityPath(city), query: { limit: size, ...(cursor ? { cursor } : {}) } },
        }),
      );
      return data;
    });
    if (a.json) return json(body);
    if (body.items.length === 0) return line('Nothing pending.');
    table(
      [
        { header: 'SESSION', value: (p) => p.session_id, kind: 'id' },
        { header: 'REQUEST', value: (p) => p.request_id, kind: 'id' },
        { header: 'KIND', value: (p) => p.kind },
        { header: 'PROMPT', value: (p) => p.prompt ?? '', kind: 'text' },
      ],
      body.items,
    );
  },
});

const stop = idAction({
  name: 'stop',
  description: 'End the current turn (the program keeps running)',
  examples: ['ctl session stop alp-7'],
  id: 'Session id, alias or session name',
  request: (api, path) => api.client.POST('/v0/city/{cityName}/session/{id}/stop', { params: { header: CSRF, path } }),
  done: (data, id) => (data.status === 'idle' ? `${id} was not in a turn` : `Stopped the turn of ${id}`),
});

const kill = idAction({
  name: 'kill',
  description: "End a session's program; it sleeps until a message or wake",
  examples: ['ctl session kill alp-7'],
  id: 'Session id, alias or session name',
  request: (api, path) => api.client.POST('/v0/city/{cityName}/session/{id}/kill', { params: { header: CSRF, path } }),
  done: (_, id) => `Killed the program of ${id}`,
});

const suspend = idAction({
  name: 'suspend',
  description: 'Suspend a session: its program ends; a message or wake starts it again',
  examples: ['ctl session suspend alp-7'],
  id: 'Session id, alias or session name',
  request: (api, path) =>
    api.client.POST('/v0/city/{cityName}/session/{id}/suspend', { params: { header: CSRF, path } }),
  done: (data) => `Suspended ${data.id}`,
});

const wake = idAction({
  name: 'wake',
  description: "Start a dormant session's program again (resuming its conversation where the provider can)",
  examples: ['ctl session wake alp-7'],
  id: 'Session id, alias or session name',
  request: (api, path) => api.client.POST('/v0/city/{cityName}/session/{id}/wake', { params: { header: CSRF, path } }),
  done: (data) => `Waking ${data.id} (${data.state})`,
});

const close = command({
  name: 'close',
  description: 'Close a session for good (its transcript stays; --delete removes it too)',
  examples: ['ctl session close alp-7', 'ctl session close alp-7 --delete'],
  args: { ...idArg, delete: { type: 'boolean', description: 'Remove the session and its transcript' }, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/session/{id}/close', {
        params: { header: CSRF, path: { ...cityPath(city), id: a.id }, query: a.delete ? { delete: true } : {} },
      }),
    );
    if (a.json) return json(data);
    line(data.status === 'deleted' ? `Deleted ${data.id}` : `Closed ${data.id}`);
  },
});

export const sessionCommand = group({
  name: 'session',
  description: "Sessions: live processes of a provider's program that people and programs talk to",
  examples: [
    'ctl session new claude --alias review',
    'ctl session send review "Fix the flaky test"',
    'ctl session stream review',
    'ctl session respond review allow',
  ],
  commands: {
    new: create,
    list,
    show,
    send: deliveryCommand('send'),
    submit: deliveryCommand('submit'),
    transcript,
    agents,
    stream,
    stop,
    kill,
    suspend,
    wake,
    reset,
    close,
    respond,
    pending,
    'permission-mode': permissionMode,
    attach,
  },
});
