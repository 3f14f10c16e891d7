import { rmSync } from 'node:fs';
import { expect } from 'chai';
import type { ConversationRef } from '../../shared/dto/extmsg.js';
import { Problem } from '../../shared/http/problem.js';
import { ExtmsgStore } from '../../controller/extmsg/extmsg-store.js';
import { ConversationTranscripts } from '../../controller/extmsg/transcript.js';
import type { SessionService } from '../../controller/sessions/session-service.js';
import { tempDir } from '../helpers/temp-dir.js';

const room = (id: string, scope = 'chat.example'): ConversationRef => ({
  scope_id: scope,
  provider: 'chat',
  account_id: 'bot',
  conversation_id: id,
  kind: 'room',
});

describe('external messaging transcript pages (in-process)', function () {
  let dir: string;
  let store: ExtmsgStore;
  let transcripts: ConversationTranscripts;

  function say(conversation: ConversationRef, text: string): void {
    store.append({
      Conversation: conversation,
      Kind: 'inbound',
      Provenance: 'live',
      ProviderMessageID: text,
      Actor: { id: 'u1', display_name: 'Ada', is_bot: false },
      Text: text,
      ExplicitTarget: '',
      ReplyToMessageID: '',
      Attachments: [],
      SourceSessionID: '',
      CreatedAt: new Date().toISOString(),
      Metadata: {},
    });
  }

  function all(query: Parameters<ConversationTranscripts['list']>[0]): string[] {
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = transcripts.list({ ...query, ...(cursor ? { cursor } : {}) });
      seen.push(...page.items.map((r) => r.Text));
      cursor = page.next_cursor;
    } while (cursor);
    return seen;
  }

  beforeEach(function () {
    dir = tempDir('ctl-extmsg-unit-');
    store = new ExtmsgStore(dir);
    transcripts = new ConversationTranscripts({ store, sessions: {} as SessionService });
    // Interleaved: each conversation's sequences start at 1, so a sequence says nothing across conversations.
    for (const [id, text] of [
      ['#a', 'A1'],
      ['#b', 'B1'],
      ['#a', 'A2'],
      ['#a', 'A3'],
      ['#b', 'B2'],
      ['#c', 'C1'],
    ]) {
      say(room(id), text);
    }
    say(room('#a', 'elsewhere'), 'X1');
  });

  afterEach(function () {
    rmSync(dir, { recursive: true, force: true });
  });

  it('pages over every conversation listed, in the order recorded, whatever the page size', function () {
    const everything = ['A1', 'B1', 'A2', 'A3', 'B2', 'C1'];
    for (const limit of [1, 2, 3, 5, 6, 7]) {
      expect(all({ scope_id: 'chat.example', limit }), `limit ${limit}`).to.deep.equal(everything);
      expect(all({ scope_id: 'chat.example', limit, order: 'desc' }), `limit ${limit} desc`).to.deep.equal(
        [...everything].reverse(),
      );
    }
    expect(transcripts.list({ scope_id: 'chat.example', limit: 2 }).total).to.equal(6);
  });

  it('pages one conversation the same way, and after_sequence still starts within it', function () {
    const a = { scope_id: 'chat.example', provider: 'chat', account_id: 'bot', conversation_id: '#a' };
    expect(all({ ...a, limit: 1 })).to.deep.equal(['A1', 'A2', 'A3']);
    expect(all({ ...a, limit: 1, after_sequence: 1 })).to.deep.equal(['A2', 'A3']);
    expect(all({ ...a, limit: 2, order: 'desc', after_sequence: 3 })).to.deep.equal(['A2', 'A1']);
  });

  it('a cursor survives a restart of the store (the listing is rebuilt in the same order)', function () {
    const first = transcripts.list({ scope_id: 'chat.example', limit: 4 });
    store = new ExtmsgStore(dir);
    transcripts = new ConversationTranscripts({ store, sessions: {} as SessionService });
    const rest = transcripts.list({ scope_id: 'chat.example', limit: 4, cursor: first.next_cursor });
    expect(rest.items.map((r) => r.Text)).to.deep.equal(['B2', 'C1']);
  });

  it('refuses a cursor it did not issue', function () {
    for (const cursor of ['3', 'v1:nonsense', 'v1:' + Buffer.from('{"k":"ss","b":"x"}').toString('base64url')]) {
      expect(() => transcripts.list({ cursor }), cursor)
        .to.throw(Problem)
        .with.property('status', 400);
    }
  });
});
