import type { ConversationTranscriptRecord, ExtmsgAdapterInfo, SessionBindingRecord } from '../../shared/dto/extmsg.js';
import { call, CSRF } from '../_api.js';
import { command, group } from '../_command.js';
import { parseFlagDuration } from '../../shared/duration.js';
import { CliError } from '../_errors.js';
import { inCityFlags } from '../_flags.js';
import { json, line, table } from '../_output.js';
import { cityPath, inCity } from '../_scope.js';

/** The flags that name a conversation. */
const conversationFlags = {
  provider: { type: 'string', description: 'The chat system (irc, slack, …)', required: true },
  account: { type: 'string', description: 'The adapter’s account', valueHint: 'ID', required: true },
  scope: { type: 'string', description: 'The server or workspace', valueHint: 'ID', required: true },
  conversation: {
    type: 'string',
    description: 'The conversation (a channel, a nick, a thread id)',
    valueHint: 'ID',
    required: true,
  },
  kind: { type: 'string', description: 'dm, room (default) or thread', valueHint: 'KIND' },
  parent: { type: 'string', description: 'A thread’s room', valueHint: 'ID' },
} as const;

function conversationOf(a: {
  provider: string;
  account: string;
  scope: string;
  conversation: string;
  kind?: string;
  parent?: string;
}) {
  const kind = (a.kind ?? 'room') as 'dm' | 'room' | 'thread';
  if (!['dm', 'room', 'thread'].includes(kind)) throw new CliError(`invalid --kind: ${a.kind} (dm, room or thread)`);
  return {
    scope_id: a.scope,
    provider: a.provider,
    account_id: a.account,
    conversation_id: a.conversation,
    kind,
    ...(a.parent ? { parent_conversation_id: a.parent } : {}),
  };
}

const adapters = command({
  name: 'adapters',
  description: 'The adapters registered with the city: whether each takes deliveries, and what each is still owed',
  examples: ['ctl extmsg adapters'],
  args: { ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/extmsg/adapters', { params: { path: cityPath(city) } }),
    );
    if (a.json) return json(data);
    if (data.items.length === 0) return line('No adapters.');
    table<ExtmsgAdapterInfo>(
      [
        { header: 'NAME', value: (x) => x.name, kind: 'id' },
        { header: 'PROVIDER', value: (x) => x.provider },
        { header: 'ACCOUNT', value: (x) => x.account_id },
        { header: 'STATE', value: (x) => x.state, kind: 'status' },
        { header: 'PENDING', value: (x) => String(x.pending_deliveries) },
        { header: 'CALLBACK', value: (x) => x.callback_url ?? '-', kind: 'text' },
        { header: 'LAST ERROR', value: (x) => x.last_error, kind: 'text' },
      ],
      data.items,
    );
  },
});

const bind = command({
  name: 'bind',
  description: 'Bind a conversation to a session or an agent',
  examples: [
    "ctl extmsg bind --provider irc --account ctl-bot --scope irc.example --conversation '#ops' --agent worker",
    "ctl extmsg bind --provider irc --account ctl-bot --scope irc.example --conversation '#ops' --session s-12 --replace",
    "ctl extmsg bind --provider irc --account ctl-bot --scope irc.example --conversation '#standup' --agent worker --for 1h",
  ],
  args: {
    ...conversationFlags,
    session: { type: 'string', description: 'A session (id or name)', valueHint: 'ID' },
    agent: { type: 'string', description: 'An agent (its running session takes the messages)', valueHint: 'NAME' },
    replace: { type: 'boolean', description: 'Take the conversation over from its binding' },
    for: { type: 'string', description: 'End the binding after this long (30m, 8h, …)', valueHint: 'DURATION' },
    ...inCityFlags,
  },
  async run({ args: a }) {
    if (!a.session === !a.agent) throw new CliError('--session or --agent is required (one of them)');
    let expiresAt: string | undefined;
    if (a.for !== undefined) {
      let ms: number;
      try {
        ms = parseFlagDuration(a.for);
      } catch (err) {
        throw new CliError(`invalid --for: ${(err as Error).message}`);
      }
      if (ms <= 0) throw new CliError('invalid --for: must be longer than nothing');
      expiresAt = new Date(Date.now() + ms).toISOString();
    }
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/extmsg/bind', {
        params: { header: CSRF, path: cityPath(city) },
        body: {
          conversation: conversationOf(a),
          ...(a.session ? { session_id: a.session } : { agent_name: a.agent }),
          ...(a.replace ? { replace: true } : {}),
          ...(expiresAt ? { expires_at: expiresAt } : {}),
        },
      }),
    );
    if (a.json) return json(data);
    line(
      `Bound ${data.Conversation.conversation_id} to ${data.SessionID || `agent ${data.AgentName}`} (generation ${data.BindingGeneration}${data.ExpiresAt ? `, until ${data.ExpiresAt}` : ''})`,
    );
  },
});

const unbind = command({
  name: 'unbind',
  description: 'End a conversation’s binding (or every binding of --session / --agent)',
  examples: ["ctl extmsg unbind --provider irc --account ctl-bot --scope irc.example --conversation '#ops'"],
  args: {
    provider: { ...conversationFlags.provider, required: false },
    account: { ...conversationFlags.account, required: false },
    scope: { ...conversationFlags.scope, required: false },
    conversation: { ...conversationFlags.conversation, required: false },
    kind: conversationFlags.kind,
    parent: conversationFlags.parent,
    session: { type: 'string', description: 'Every binding of this session', valueHint: 'ID' },
    agent: { type: 'string', description: 'Every binding of this agent', valueHint: 'NAME' },
    ...inCityFlags,
  },
  async run({ args: a }) {
    const named = a.conversation;
    if (!named && !a.session && !a.agent)
      throw new CliError('name a conversation (--conversation …), --session or --agent');
    if (named && (!a.provider || !a.account || !a.scope)) {
      throw new CliError('a conversation needs --provider, --account and --scope too');
    }
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/extmsg/unbind', {
        params: { header: CSRF, path: cityPath(city) },
        body: {
          ...(named
            ? {
                conversation: conversationOf({
                  ...a,
                  provider: a.provider!,
                  account: a.account!,
                  scope: a.scope!,
                  conversation: named,
                }),
              }
            : {}),
          ...(a.session ? { session_id: a.session } : {}),
          ...(a.agent ? { agent_name: a.agent } : {}),
        },
      }),
    );
    if (a.json) return json(data);
    line(
      data.unbound.length === 0
        ? 'Nothing was bound.'
        : `Unbound ${data.unbound.map((b) => b.Conversation.conversation_id).join(', ')}`,
    );
  },
});

const bindings = command({
  name: 'bindings',
  description: 'Which session or agent each conversation goes to',
  examples: ['ctl extmsg bindings', 'ctl extmsg bindings --session s-12 --all'],
  args: {
    session: { type: 'string', description: 'Only this session’s', valueHint: 'ID' },
    all: { type: 'boolean', description: 'Ended bindings too' },
    ...inCityFlags,
  },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/extmsg/bindings', {
        params: {
          path: cityPath(city),
          query: { ...(a.session ? { session_id: a.session } : {}), ...(a.all ? { all: true } : {}) },
        },
      }),
    );
    if (a.json) return json(data);
    if (data.items.length === 0) return line('No bindings (ctl extmsg bind …).');
    table<SessionBindingRecord>(
      [
        {
          header: 'CONVERSATION',
          value: (b) => `${b.Conversation.provider}:${b.Conversation.conversation_id}`,
          kind: 'id',
        },
        { header: 'SESSION', value: (b) => b.SessionID || '-' },
        { header: 'AGENT', value: (b) => b.AgentName || '-' },
        { header: 'GEN', value: (b) => String(b.BindingGeneration) },
        { header: 'STATUS', value: (b) => b.Status, kind: 'status' },
        { header: 'SINCE', value: (b) => b.BoundAt },
      ],
      data.items,
    );
  },
});

const transcript = command({
  name: 'transcript',
  description: 'A conversation’s messages, in and out',
  examples: [
    "ctl extmsg transcript --provider irc --account ctl-bot --scope irc.example --conversation '#ops' --limit 20",
  ],
  args: {
    ...conversationFlags,
    after: { type: 'string', description: 'After this sequence number', valueHint: 'N' },
    limit: { type: 'string', description: 'At most this many (≤ 500; default 100)', valueHint: 'N' },
    ...inCityFlags,
  },
  async run({ args: a }) {
    const number = (v: string | undefined, flag: string) => {
      if (v === undefined) return undefined;
      if (!/^\d+$/.test(v)) throw new CliError(`invalid --${flag}: ${v} (a whole number)`);
      return Number(v);
    };
    const after = number(a.after, 'after');
    const limit = number(a.limit, 'limit');
    const c = conversationOf(a);
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/extmsg/transcript', {
        params: {
          path: cityPath(city),
          query: {
            scope_id: c.scope_id,
            provider: c.provider,
            account_id: c.account_id,
            conversation_id: c.conversation_id,
            ...(after !== undefined ? { after_sequence: after } : {}),
            ...(limit !== undefined ? { limit } : {}),
          },
        },
      }),
    );
    if (a.json) return json(data);
    if (data.items.length === 0) return line('No messages.');
    table<ConversationTranscriptRecord>(
      [
        { header: 'SEQ', value: (r) => String(r.Sequence) },
        { header: 'DIR', value: (r) => (r.Kind === 'inbound' ? 'in' : 'out') },
        { header: 'FROM', value: (r) => r.Actor.display_name || r.Actor.id },
        { header: 'TEXT', value: (r) => r.Text.replace(/\s+/g, ' '), kind: 'text' },
      ],
      data.items,
    );
  },
});

export const extmsgCommand = group({
  name: 'extmsg',
  description: 'External messaging: chat adapters, the conversations bound to sessions, their transcripts',
  examples: ['ctl extmsg adapters', 'ctl extmsg bindings'],
  commands: { adapters, bind, unbind, bindings, transcript },
});
