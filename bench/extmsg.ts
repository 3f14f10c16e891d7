/**
 * External messaging benchmark, a real supervisor and controller and a loopback adapter, measuring
 *   1. the round trip: `POST /extmsg/inbound` → the bound echo session's reply → the adapter's callback
 *      receiving it, p50/p99 over 100 messages sent one after another;
 *   2. a conversation of 1,000 messages: `GET /extmsg/transcript` pages of 100 (at offsets across it), p50/p99.
 * Prints tables and writes `.bench-out/extmsg.json`. Run with `npm run bench -- extmsg`.
 */
import { createServer } from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createSession, startSessionCity } from '../test/helpers/sessions.js';
import { rounded, summarize } from './stats.js';
import { formatTable, ms } from './table.js';

const ROUND_TRIPS = 100;
const MESSAGES = 1000;
const PAGES = 50;

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT_FILE = join(repoRoot, '.bench-out', 'extmsg.json');

export async function runExtmsg(): Promise<void> {
  // The adapter: resolves the waiter of each reply as it arrives.
  const waiting = new Map<string, () => void>();
  const adapter = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      const { text } = JSON.parse(raw) as { text: string };
      res.writeHead(200).end('{}');
      waiting.get(text)?.();
    });
  });
  await new Promise<void>((r) => adapter.listen(0, '127.0.0.1', r));
  const address = adapter.address();
  const callback = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/outbound`;
  const city = await startSessionCity('bench-extmsg');
  const roundTrips: number[] = [];
  const pages: number[] = [];
  try {
    const { api } = city;
    const session = await createSession(api, { name: 'echo', title: 'bench' });
    const conversation = {
      scope_id: 'bench',
      provider: 'chat',
      account_id: 'bot',
      conversation_id: '#bench',
      kind: 'room',
    };
    await api.post('/extmsg/adapters', { provider: 'chat', account_id: 'bot', callback_url: callback });
    await api.post('/extmsg/bind', { conversation, session_id: session });
    const send = (text: string, id: string) =>
      api.post('/extmsg/inbound', {
        provider: 'chat',
        account_id: 'bot',
        message: {
          provider_message_id: id,
          conversation,
          actor: { id: 'u', display_name: 'u', is_bot: false },
          text,
          received_at: new Date().toISOString(),
        },
      });
    for (let i = 0; i < ROUND_TRIPS + 5; i++) {
      const text = `ping ${i}`;
      const replied = new Promise<void>((r) => waiting.set(`echo: ${text}`, r));
      const started = performance.now();
      const res = await send(text, `rt-${i}`);
      if (res.status !== 200) throw new Error(`inbound: ${res.status} ${JSON.stringify(res.body)}`);
      await replied;
      if (i >= 5) roundTrips.push(performance.now() - started);
    }
    // A conversation of 1,000 messages (unbound: recorded, nothing to answer).
    const log = { ...conversation, conversation_id: '#log' };
    for (let i = 0; i < MESSAGES; i++) {
      await api.post('/extmsg/inbound', {
        provider: 'chat',
        account_id: 'bot',
        message: {
          provider_message_id: `log-${i}`,
          conversation: log,
          actor: { id: 'u', display_name: 'u', is_bot: false },
          text: `message ${i} with a little text in it`,
          received_at: new Date().toISOString(),
        },
      });
    }
    const q = 'scope_id=bench&provider=chat&account_id=bot&conversation_id=%23log&limit=100';
    for (let i = 0; i < PAGES + 5; i++) {
      const after = (i * 97) % (MESSAGES - 100);
      const started = performance.now();
      const res = await api.get<{ items: unknown[] }>(`/extmsg/transcript?${q}&after_sequence=${after}`);
      const took = performance.now() - started;
      if (res.status !== 200 || res.body.items.length !== 100) throw new Error(`transcript: ${res.status}`);
      if (i >= 5) pages.push(took);
    }
  } finally {
    await city.sup.cleanup();
    adapter.close();
  }
  const rt = rounded(summarize(roundTrips));
  const page = rounded(summarize(pages));
  console.log(
    formatTable(
      'Inbound → echo session reply → adapter callback (one at a time)',
      ['messages', 'p50', 'p99'],
      [[String(roundTrips.length), ms(rt.median), ms(rt.p99)]],
    ),
  );
  console.log(
    formatTable(
      `GET /extmsg/transcript, a page of 100 of a ${MESSAGES}-message conversation`,
      ['pages', 'p50', 'p99'],
      [[String(pages.length), ms(page.median), ms(page.p99)]],
    ),
  );
  mkdirSync(dirname(OUT_FILE), { recursive: true });
  writeFileSync(OUT_FILE, `${JSON.stringify({ round_trip_ms: rt, transcript_page_ms: page }, null, 2)}\n`);
  console.log(`wrote ${OUT_FILE}`);
}
