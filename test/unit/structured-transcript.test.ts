import { expect } from 'chai';
import { structuredHistory, structuredMessages } from '../../controller/sessions/structured-transcript.js';
import type { EventRecord } from '../../shared/events/record.js';

let seq = 0;
const entry = (type: string, payload: Record<string, unknown>): EventRecord => ({
  seq: ++seq,
  type,
  ts: '2026-11-26T00:00:00.000Z',
  actor: 'assistant',
  payload,
});

/** A Claude Code turn as the stream-json protocol writes it: reasoning, a tool call, its result, a reply. */
function turn(): EventRecord[] {
  seq = 0;
  return [
    entry('start', {}),
    entry('user', { text: 'fix it', turn: 1 }),
    entry('thought', { text: 'look at the test first', signature: 'sig-1', turn: 1 }),
    entry('tool_call', { text: 'Bash ls', tool_use_id: 'tu-1', name: 'Bash', input: { command: 'ls' }, turn: 1 }),
    entry('tool_result', { text: 'a.ts', tool_use_id: 'tu-1', turn: 1 }),
    entry('pending', { text: 'Run rm?', request_id: 'rq-1', pending_kind: 'permission', options: ['allow'], turn: 1 }),
    entry('pending_cleared', { text: 'allow', request_id: 'rq-1', action: 'allow', turn: 1 }),
    entry('assistant', { text: 'Done', turn: 1 }),
    entry('assistant', { text: ' now.', chunk: true, turn: 1 }),
  ];
}

describe('structured transcripts (unit)', function () {
  it('groups entries into typed messages; a turn without its end is partial', function () {
    const messages = structuredMessages(turn(), false);
    expect(messages.map((m) => [m.id, m.role, m.status])).to.deep.equal([
      ['2', 'user', 'final'],
      ['3', 'assistant', 'partial'],
      ['5', 'tool', 'final'],
      ['6', 'system', 'final'],
      ['8', 'assistant', 'partial'],
    ]);
    expect(messages[1].blocks).to.deep.equal([
      { type: 'thinking' },
      { type: 'tool_use', id: 'tu-1', name: 'Bash', input: { command: 'ls' } },
    ]);
    expect(messages[2].blocks).to.deep.equal([{ type: 'tool_result', tool_call_id: 'tu-1', content: 'a.ts' }]);
    expect(messages[3].blocks.map((b) => b.interaction)).to.deep.equal([
      { state: 'pending', request_id: 'rq-1', kind: 'permission', prompt: 'Run rm?', options: ['allow'] },
      { state: 'allow', request_id: 'rq-1' },
    ]);
    expect(messages[4].blocks).to.deep.equal([{ type: 'text', text: 'Done now.' }]);
    const ended = [...turn(), entry('turn_end', { turn: 1 })];
    expect(structuredMessages(ended, false).map((m) => m.status)).to.not.include('partial');
  });

  it('gives reasoning and its signature only when asked', function () {
    const [, thinking] = structuredMessages(turn(), true);
    expect(thinking.blocks[0]).to.deep.equal({
      type: 'thinking',
      thinking: 'look at the test first',
      signature: 'sig-1',
    });
  });

  it('history: the cursor to go on from, calls left open, compactions, a pending question', function () {
    const records = turn().slice(0, 4);
    records.push(entry('notice', { text: 'conversation compacted (auto)', compaction: true }));
    const history = structuredHistory('s-1', records, { activity: 'in-turn', pendingRequestId: 'rq-9' });
    expect(history).to.deep.equal({
      transcript_stream_id: 's-1',
      generation: { id: 's-1' },
      cursor: { resume_token: '10', after_entry_id: '10' },
      continuity: { status: 'compacted', compaction_count: 1 },
      tail_state: {
        activity: 'in-turn',
        last_entry_id: '10',
        open_tool_call_ids: ['tu-1'],
        pending_interaction_ids: ['rq-9'],
      },
    });
  });
});
