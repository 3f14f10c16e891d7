import type { MailReplyInputBody, MailSendInputBody, Message } from '../../shared/dto/mail.js';
import { idAction } from '../_action.js';
import { mailCheckCommand } from './agent-side.js';
import { call, CSRF } from '../_api.js';
import { command, group } from '../_command.js';
import { CliError } from '../_errors.js';
import { idempotencyFlag, inCityFlags, limitFlag, listLimit } from '../_flags.js';
import { fields, json, line, noteMore, table } from '../_output.js';
import { allPages, collectPages } from '../_pages.js';
import { cityPath, inCity } from '../_scope.js';
import type { Column } from '../_types.js';

const idArg = { id: { type: 'positional', description: 'Message id', required: true } } as const;

const MESSAGE_COLUMNS: Column<Message>[] = [
  { header: 'ID', value: (m) => m.id, kind: 'id' },
  { header: 'FROM', value: (m) => m.from, kind: 'id' },
  { header: 'TO', value: (m) => m.to, kind: 'id' },
  { header: 'STATE', value: (m) => (m.read ? 'read' : 'unread'), kind: 'status' },
  { header: 'SUBJECT', value: (m) => m.subject, kind: 'text' },
];

function idempotencyHeader(key: string | undefined): { 'idempotency-key'?: string } {
  return key !== undefined ? { 'idempotency-key': key } : {};
}

const send = command({
  name: 'send',
  description: 'Send a message (a new thread)',
  examples: ['ctl mail send --to ann --subject "Review?" --body "alp-2 is ready"'],
  args: {
    to: { type: 'string', description: 'Recipient', valueHint: 'AGENT', required: true },
    subject: { type: 'string', description: 'Subject', required: true },
    body: { type: 'string', description: 'Body' },
    from: { type: 'string', description: 'Sender (default human)' },
    rig: { type: 'string', description: 'Rig the message belongs to' },
    ...idempotencyFlag,
    ...inCityFlags,
  },
  async run({ args: a }) {
    const body: MailSendInputBody = { to: a.to, subject: a.subject };
    if (a.body !== undefined) body.body = a.body;
    if (a.from !== undefined) body.from = a.from;
    if (a.rig !== undefined) body.rig = a.rig;
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/mail', {
        params: { header: { ...CSRF, ...idempotencyHeader(a['idempotency-key']) }, path: cityPath(city) },
        body,
      }),
    );
    if (a.json) return json(data);
    line(`Sent ${data.id} to ${data.to}: ${data.subject}`);
  },
});

const inbox = command({
  name: 'inbox',
  description: 'Unread messages, newest first (--all: read ones too; archived ones never)',
  examples: ['ctl mail inbox human', 'ctl mail inbox --agent ann', 'ctl mail inbox --all --limit 20'],
  args: {
    recipient: {
      type: 'positional',
      description: 'Only messages to this recipient (as --agent)',
      required: false,
      complete: 'agents',
    },
    agent: { type: 'string', description: 'Only messages to this recipient' },
    all: { type: 'boolean', description: 'Read messages too' },
    rig: { type: 'string', description: 'Only messages of this rig' },
    ...limitFlag,
    ...inCityFlags,
  },
  async run({ args: a }) {
    const limit = listLimit(a.limit);
    if (a.recipient !== undefined && a.agent !== undefined && a.recipient !== a.agent) {
      throw new CliError('pass the recipient either as an argument or with --agent, not both');
    }
    const agent = a.recipient ?? a.agent;
    const { api, city } = await inCity(a);
    const body = await collectPages(limit, async (size, cursor) => {
      const { data } = await call(
        api,
        api.client.GET('/v0/city/{cityName}/mail', {
          params: {
            path: cityPath(city),
            query: {
              ...(agent !== undefined ? { agent } : {}),
              ...(a.rig !== undefined ? { rig: a.rig } : {}),
              ...(a.all ? { status: 'all' } : {}),
              limit: size,
              ...(cursor ? { cursor } : {}),
            },
          },
        }),
      );
      return data;
    });
    if (a.json) return json(body);
    if (body.items.length === 0) return line(a.all ? 'No messages.' : 'No unread messages.');
    table(MESSAGE_COLUMNS, body.items);
    noteMore(body.items.length, body.total);
  },
});

const read = command({
  name: 'read',
  description: 'Mark a message read and print it',
  examples: ['ctl mail read alp-3'],
  args: { ...idArg, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const path = { ...cityPath(city), id: a.id };
    await call(api, api.client.POST('/v0/city/{cityName}/mail/{id}/read', { params: { header: CSRF, path } }));
    const { data } = await call(api, api.client.GET('/v0/city/{cityName}/mail/{id}', { params: { path } }));
    if (a.json) return json(data);
    fields([
      ['ID', data.id],
      ['From', data.from],
      ['To', data.to],
      ['Subject', data.subject],
      ['Date', data.created_at],
      ['Thread', data.thread_id],
      ['Reply to', data.reply_to],
      ['Rig', data.rig],
    ]);
    if (data.body !== '') process.stdout.write(`\n${data.body.replace(/\n?$/, '\n')}`);
  },
});

const reply = command({
  name: 'reply',
  description: "Reply in a message's thread, to its sender (subject Re: … unless --subject)",
  examples: ['ctl mail reply alp-3 --body "on it"'],
  args: {
    ...idArg,
    body: { type: 'string', description: 'Body' },
    from: { type: 'string', description: "Sender (default: the original's recipient)" },
    subject: { type: 'string', description: 'Subject (default Re: <original subject>)' },
    ...idempotencyFlag,
    ...inCityFlags,
  },
  async run({ args: a }) {
    const body: MailReplyInputBody = {};
    if (a.body !== undefined) body.body = a.body;
    if (a.from !== undefined) body.from = a.from;
    if (a.subject !== undefined) body.subject = a.subject;
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/mail/{id}/reply', {
        params: {
          header: { ...CSRF, ...idempotencyHeader(a['idempotency-key']) },
          path: { ...cityPath(city), id: a.id },
        },
        body,
      }),
    );
    if (a.json) return json(data);
    line(`Sent ${data.id} to ${data.to}: ${data.subject}`);
  },
});

const archive = idAction({
  name: 'archive',
  description: 'Archive a message (it leaves the inbox; its thread keeps it)',
  examples: ['ctl mail archive alp-3'],
  id: 'Message id',
  request: (api, path) => api.client.POST('/v0/city/{cityName}/mail/{id}/archive', { params: { header: CSRF, path } }),
  done: (_, id) => `Archived ${id}`,
});

const thread = command({
  name: 'thread',
  description: 'Every message of a thread, oldest first (ID: a message or a thread id)',
  examples: ['ctl mail thread alp-3'],
  args: { ...idArg, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    // Pages come newest first, each oldest first: the whole thread is the pages in reverse.
    const pages: Message[][] = [];
    let total = 0;
    await allPages(async (size, cursor) => {
      const { data } = await call(
        api,
        api.client.GET('/v0/city/{cityName}/mail/thread/{id}', {
          params: { path: { ...cityPath(city), id: a.id }, query: { limit: size, ...(cursor ? { cursor } : {}) } },
        }),
      );
      pages.push(data.items);
      total = data.total;
      return data;
    });
    const items = pages.reverse().flat();
    if (a.json) return json({ items, total });
    table(MESSAGE_COLUMNS, items);
  },
});

export const mailCommand = group({
  name: 'mail',
  description: 'Messages between agents and people',
  examples: [
    'ctl mail send --to ann --subject "Review?"',
    'ctl mail inbox --agent ann',
    'ctl mail reply alp-3 --body "on it"',
  ],
  commands: { send, inbox, check: mailCheckCommand, read, reply, archive, thread },
});
