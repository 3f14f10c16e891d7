import { defineCommand } from 'citty';
import type { MailReplyInputBody, MailSendInputBody, Message } from '../../shared/dto/mail.js';
import { call, CSRF } from '../_api.js';
import { CliError, leafCommand } from '../_command.js';
import { allPages, collectPages, noteMore } from '../_pages.js';
import { renderTable } from '../_table.js';
import { cell, cityArgs, cityPath, inCity, listLimit, optString, renderFields, write, writeJson } from '../_work.js';

const idArg = { id: { type: 'positional', description: 'Message id', required: true } } as const;
const keyArg = {
  'idempotency-key': { type: 'string', description: 'Makes a retried send safe', valueHint: 'KEY' },
} as const;

function messageTable(messages: Message[]): string {
  return renderTable(
    ['ID', 'FROM', 'TO', 'STATE', 'SUBJECT'],
    messages.map((m) => [m.id, cell(m.from), cell(m.to), m.read ? 'read' : 'unread', m.subject]),
  );
}

function idempotencyHeader(key: string | undefined): { 'idempotency-key'?: string } {
  return key !== undefined ? { 'idempotency-key': key } : {};
}

const send = leafCommand('mail send', {
  meta: { name: 'send', description: 'Send a message (a new thread)' },
  args: {
    to: { type: 'string', description: 'Recipient', valueHint: 'AGENT' },
    subject: { type: 'string', description: 'Subject' },
    body: { type: 'string', description: 'Body' },
    from: { type: 'string', description: 'Sender (default human)' },
    rig: { type: 'string', description: 'Rig the message belongs to' },
    ...keyArg,
    ...cityArgs,
  },
  async run({ args: a }) {
    const to = optString(a.to, 'to');
    const subject = optString(a.subject, 'subject');
    if (to === undefined) throw new CliError('--to is required');
    if (subject === undefined) throw new CliError('--subject is required');
    const body: MailSendInputBody = { to, subject };
    const text = optString(a.body, 'body');
    const from = optString(a.from, 'from');
    const rig = optString(a.rig, 'rig');
    const key = optString(a['idempotency-key'], 'idempotency-key');
    if (text !== undefined) body.body = text;
    if (from !== undefined) body.from = from;
    if (rig !== undefined) body.rig = rig;
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/mail', {
        params: { header: { ...CSRF, ...idempotencyHeader(key) }, path: cityPath(city) },
        body,
      }),
    );
    if (a.json) return writeJson(data);
    write(`Sent ${data.id} to ${data.to}: ${data.subject}`);
  },
});

const inbox = leafCommand('mail inbox', {
  meta: { name: 'inbox', description: 'Unread messages, newest first (--all: read ones too; archived ones never)' },
  args: {
    agent: { type: 'string', description: 'Only messages to this recipient' },
    all: { type: 'boolean', description: 'Read messages too' },
    rig: { type: 'string', description: 'Only messages of this rig' },
    limit: { type: 'string', description: 'At most this many (default 100; pages through the API)', valueHint: 'N' },
    ...cityArgs,
  },
  async run({ args: a }) {
    const limit = listLimit(a.limit);
    const agent = optString(a.agent, 'agent');
    const rig = optString(a.rig, 'rig');
    const { api, city } = await inCity(a);
    const body = await collectPages(limit, async (size, cursor) => {
      const { data } = await call(
        api,
        api.client.GET('/v0/city/{cityName}/mail', {
          params: {
            path: cityPath(city),
            query: {
              ...(agent !== undefined ? { agent } : {}),
              ...(rig !== undefined ? { rig } : {}),
              ...(a.all ? { status: 'all' } : {}),
              limit: size,
              ...(cursor ? { cursor } : {}),
            },
          },
        }),
      );
      return data;
    });
    if (a.json) return writeJson(body);
    if (body.items.length === 0) return write(a.all ? 'No messages.' : 'No unread messages.');
    process.stdout.write(messageTable(body.items));
    noteMore(body.items.length, body.total);
  },
});

const read = leafCommand('mail read', {
  meta: { name: 'read', description: 'Mark a message read and print it' },
  args: { ...idArg, ...cityArgs },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const path = { ...cityPath(city), id: a.id };
    await call(api, api.client.POST('/v0/city/{cityName}/mail/{id}/read', { params: { header: CSRF, path } }));
    const { data } = await call(api, api.client.GET('/v0/city/{cityName}/mail/{id}', { params: { path } }));
    if (a.json) return writeJson(data);
    process.stdout.write(
      renderFields([
        ['ID', data.id],
        ['From', data.from],
        ['To', data.to],
        ['Subject', data.subject],
        ['Date', data.created_at],
        ['Thread', data.thread_id],
        ['Reply to', data.reply_to],
        ['Rig', data.rig],
      ]),
    );
    if (data.body !== '') process.stdout.write(`\n${data.body.replace(/\n?$/, '\n')}`);
  },
});

const reply = leafCommand('mail reply', {
  meta: { name: 'reply', description: "Reply in a message's thread, to its sender (subject Re: … unless --subject)" },
  args: {
    ...idArg,
    body: { type: 'string', description: 'Body' },
    from: { type: 'string', description: "Sender (default: the original's recipient)" },
    subject: { type: 'string', description: 'Subject (default Re: <original subject>)' },
    ...keyArg,
    ...cityArgs,
  },
  async run({ args: a }) {
    const body: MailReplyInputBody = {};
    const text = optString(a.body, 'body');
    const from = optString(a.from, 'from');
    const subject = optString(a.subject, 'subject');
    const key = optString(a['idempotency-key'], 'idempotency-key');
    if (text !== undefined) body.body = text;
    if (from !== undefined) body.from = from;
    if (subject !== undefined) body.subject = subject;
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/mail/{id}/reply', {
        params: { header: { ...CSRF, ...idempotencyHeader(key) }, path: { ...cityPath(city), id: a.id } },
        body,
      }),
    );
    if (a.json) return writeJson(data);
    write(`Sent ${data.id} to ${data.to}: ${data.subject}`);
  },
});

const archive = leafCommand('mail archive', {
  meta: { name: 'archive', description: 'Archive a message (it leaves the inbox; its thread keeps it)' },
  args: { ...idArg, ...cityArgs },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/mail/{id}/archive', {
        params: { header: CSRF, path: { ...cityPath(city), id: a.id } },
      }),
    );
    if (a.json) return writeJson(data);
    write(`Archived ${a.id}`);
  },
});

const thread = leafCommand('mail thread', {
  meta: { name: 'thread', description: 'Every message of a thread, oldest first (ID: a message or a thread id)' },
  args: { ...idArg, ...cityArgs },
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
    if (a.json) return writeJson({ items, total });
    process.stdout.write(messageTable(items));
  },
});

export const mailCommand = defineCommand({
  meta: { name: 'mail', description: 'Messages between agents and people' },
  subCommands: { send, inbox, read, reply, archive, thread },
});
