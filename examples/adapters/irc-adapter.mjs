#!/usr/bin/env node
// An IRC adapter for ctl's external messaging: it joins channels on an IRC server, registers itself with a
// city, relays what people say in those channels (and in private messages to it) to the city, and says in the
// channel what the city's sessions answer.
//
//   node examples/adapters/irc-adapter.mjs --city alpha --server 127.0.0.1:6667 --nick ctl-bot \
//        --channels '#ops,#dev' [--bind '#ops=worker'] [--api http://127.0.0.1:8372]
//
// --bind binds a channel to an agent when it is bound to nothing yet (the same as `ctl extmsg bind`).
// It uses irc-framework (a well-kept IRC client library: registration, PING, reconnects, line splitting).
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import IRC from 'irc-framework';

const { values: args } = parseArgs({
  options: {
    city: { type: 'string' },
    server: { type: 'string', default: '127.0.0.1:6667' },
    nick: { type: 'string', default: 'ctl-bot' },
    channels: { type: 'string', default: '' },
    bind: { type: 'string', multiple: true, default: [] },
    api: { type: 'string', default: process.env.CTL_API ?? 'http://127.0.0.1:8372' },
  },
});
if (!args.city) fail('--city is required');
const [host, portText] = args.server.split(':');
const port = Number(portText ?? 6667);
const channels = args.channels
  .split(',')
  .map((c) => c.trim())
  .filter(Boolean);
const scope = `${host}:${port}`;
const account = args.nick;
const cityUrl = `${args.api.replace(/\/+$/, '')}/v0/city/${encodeURIComponent(args.city)}`;
// IRC lines are at most 512 bytes with the prefix and command; what the city sends is split to fit.
const MAX_MESSAGE_LENGTH = 400;

function fail(message) {
  process.stderr.write(`irc-adapter: ${message}\n`);
  process.exit(1);
}

function log(message) {
  process.stderr.write(`irc-adapter: ${message}\n`);
}

async function city(method, path, body) {
  const res = await fetch(`${cityUrl}${path}`, {
    method,
    headers: { 'Content-Type': 'application/json', 'X-CTL-Request': 'irc-adapter' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

function conversation(target, kind) {
  return { scope_id: scope, provider: 'irc', account_id: account, conversation_id: target, kind };
}

const client = new IRC.Client();
let connected = false;
let counter = 0;

// The city POSTs what sessions say here; it retries until we answer 2xx, so say it only when we can.
const server = createServer((req, res) => {
  if (req.method !== 'POST' || req.url !== '/outbound') {
    res.writeHead(404).end();
    return;
  }
  let raw = '';
  req.setEncoding('utf8');
  req.on('data', (chunk) => (raw += chunk));
  req.on('end', () => {
    let message;
    try {
      message = JSON.parse(raw);
    } catch {
      res.writeHead(400).end('not JSON');
      return;
    }
    if (!connected) {
      res.writeHead(503).end('not connected to IRC yet');
      return;
    }
    for (const line of String(message.text ?? '').split('\n')) {
      if (line.trim()) client.say(message.conversation.conversation_id, line);
    }
    res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"status":"said"}');
  });
});

async function register(callbackUrl) {
  for (;;) {
    try {
      await city('POST', '/extmsg/adapters', {
        provider: 'irc',
        account_id: account,
        name: `irc-${account}`,
        callback_url: callbackUrl,
        capabilities: {
          MaxMessageLength: MAX_MESSAGE_LENGTH,
          SupportsAttachments: false,
          SupportsChildConversations: false,
        },
      });
      log(`registered with city ${args.city} as irc/${account}`);
      break;
    } catch (err) {
      log(`cannot register yet (${err.message}); trying again in 1 s`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  for (const spec of args.bind) {
    const [channel, agent] = spec.split('=');
    try {
      await city('POST', '/extmsg/bind', { conversation: conversation(channel, 'room'), agent_name: agent });
      log(`bound ${channel} to agent ${agent}`);
    } catch (err) {
      // Bound elsewhere already: that binding stands (a person rebinds with ctl extmsg bind --replace).
      log(`${channel} not bound to ${agent}: ${err.message}`);
    }
  }
}

client.on('registered', () => {
  connected = true;
  for (const channel of channels) client.join(channel);
  log(`connected to ${scope} as ${client.user.nick}; joining ${channels.join(', ') || 'no channels'}`);
});
client.on('close', () => {
  connected = false;
});
client.on('privmsg', (event) => {
  if (event.nick === client.user.nick) return;
  const room = event.target.startsWith('#') || event.target.startsWith('&');
  const target = room ? event.target : event.nick;
  counter += 1;
  const id = event.tags?.msgid ?? `${scope}/${target}/${Date.now()}-${process.pid}-${counter}`;
  city('POST', '/extmsg/inbound', {
    provider: 'irc',
    account_id: account,
    message: {
      provider_message_id: id,
      conversation: conversation(target, room ? 'room' : 'dm'),
      actor: { id: `${event.nick}!${event.ident}@${event.hostname}`, display_name: event.nick, is_bot: false },
      text: event.message,
      received_at: new Date().toISOString(),
    },
  }).then(
    (result) => {
      if (result.Status === 'unbound') log(`${target}: ${result.Reason}`);
    },
    (err) => log(`could not hand over a message from ${event.nick}: ${err.message}`),
  );
});

server.listen(0, '127.0.0.1', () => {
  const callbackUrl = `http://127.0.0.1:${server.address().port}/outbound`;
  client.connect({ host, port, nick: args.nick, username: args.nick, gecos: 'ctl adapter', auto_reconnect: true });
  register(callbackUrl).catch((err) => fail(err.message));
});

const stop = () => {
  client.quit('ctl adapter stopping');
  server.close();
  setTimeout(() => process.exit(0), 200).unref();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
