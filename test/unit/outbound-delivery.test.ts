import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rmSync } from 'node:fs';
import { expect } from 'chai';
import type { EventLog } from '../../shared/events/event-log.js';
import { ExtmsgStore } from '../../controller/extmsg/extmsg-store.js';
import { OutboundDelivery } from '../../controller/extmsg/outbound-delivery.js';
import { tempDir } from '../helpers/temp-dir.js';
import { waitUntil } from '../helpers/wait.js';

// An adapter registering again resumes every pending message; one whose POST is still out must not be sent a
// second time beside it (the restarted IRC adapter of extmsg-irc said an answer twice that way).
describe('outbound delivery to adapters (in-process)', function () {
  let dir: string;
  let server: Server;
  let received: string[];
  let release: (() => void) | undefined;
  let delivery: OutboundDelivery | undefined;

  beforeEach(async function () {
    dir = tempDir('ctl-outbound-');
    received = [];
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        received.push((JSON.parse(body) as { text: string }).text);
        // The adapter takes its time answering: the attempt stays under way until the test lets it go.
        release = () => res.writeHead(200).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });

  afterEach(function () {
    delivery?.stop();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('sends a message once when its adapter registers again while the POST is still out', async function () {
    const store = new ExtmsgStore(dir);
    const { port } = server.address() as AddressInfo;
    store.putAdapter({
      provider: 'chat',
      account_id: 'bot',
      name: 'chat-bot',
      callback_url: `http://127.0.0.1:${port}/outbound`,
      registered_at: new Date().toISOString(),
    });
    const appended: { payload: Record<string, unknown> }[] = [];
    const log = { append: async (e: { payload: Record<string, unknown> }) => appended.push(e) } as unknown as EventLog;
    delivery = new OutboundDelivery({ store, log });
    const first = delivery.deliver({
      message_id: 'm1',
      provider: 'chat',
      account_id: 'bot',
      conversation: { scope_id: 's', provider: 'chat', account_id: 'bot', conversation_id: '#ops', kind: 'room' },
      session_id: 'sess-1',
      parts: ['echo: hello'],
      sent: 0,
      attempts: 0,
      next_at: 0,
    });
    await waitUntil('the first POST to arrive', async () => received.length === 1);
    delivery.resume(); // the adapter registered again
    // A resumed attempt is due at once (next_at is past): its timer fires before this one, queued after it, and
    // an attempt counts itself before it sends anything.
    await new Promise((resolve) => setTimeout(resolve, 1));
    expect(store.pending().map((p) => p.attempts)).to.deep.equal([1]);
    release!();
    expect(await first).to.include({ delivered: true });
    expect(received).to.deep.equal(['echo: hello']);
    expect(store.pending()).to.have.length(0);
    expect(appended.map((e) => e.payload.status)).to.deep.equal(['delivered']);
  });
});
