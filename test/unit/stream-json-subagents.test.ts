import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { pino } from 'pino';
import type { ResolvedProvider } from '../../controller/providers/provider-spec.js';
import { StreamJsonProtocol } from '../../controller/sessions/protocols/stream-json.js';
import type { OutputKind, RuntimeSink, SubagentOutput } from '../../controller/sessions/runtime.js';
import { Subagents } from '../../controller/sessions/subagents.js';
import { Transcript } from '../../controller/sessions/transcript.js';
import { TranscriptWriter } from '../../controller/sessions/transcript-writer.js';
import { Problem } from '../../shared/http/problem.js';
import { packageRoot } from '../../shared/paths.js';
import { tempDir } from '../helpers/temp-dir.js';

const logger = pino({ level: 'silent' });

/**
 * Frames captured from the real Claude Code 2.1.332 (`-p --input-format stream-json --output-format stream-json
 * --verbose`) against a scripted model: the model delegates through its Agent tool to a subagent that runs
 * `echo hi` through Bash and reports; the main agent then answers. Foreground: `run_in_background: false`, with
 * CLAUDE_CODE_FORWARD_SUBAGENT_TEXT=1 (as the preset sets it). Background: the default, where the program itself
 * starts a turn (`origin: task-notification`) when the subagent is done.
 */
function captured(name: string): string[] {
  return readFileSync(join(packageRoot, 'test', 'fixtures', `claude-2.1.332-subagent-${name}.jsonl`), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '');
}

interface Heard {
  outputs: { kind: OutputKind; text: string; data?: Record<string, unknown> }[];
  subagents: SubagentOutput[];
  turnEnds: number;
  turnsBegun: number;
}

function hear(lines: string[]): Heard {
  const heard: Heard = { outputs: [], subagents: [], turnEnds: 0, turnsBegun: 0 };
  const sink: RuntimeSink = {
    ready: () => undefined,
    output: (kind, text, data) => heard.outputs.push({ kind, text, data }),
    turnEnded: () => heard.turnEnds++,
    turnBegan: () => heard.turnsBegun++,
    subagent: (output) => heard.subagents.push(output),
    pending: () => undefined,
    pendingCleared: () => undefined,
    sessionKey: () => undefined,
    resumeRefused: () => undefined,
    deliveryRetried: () => undefined,
    exited: () => undefined,
    behind: () => undefined,
  };
  const protocol = new StreamJsonProtocol({ ready_delay_ms: 0 } as ResolvedProvider, sink, logger);
  // The message the captured turn answers was handed over (its `user` frame written to the program).
  protocol.started({ write: () => Promise.resolve(), signal: () => undefined });
  void protocol.deliver({ id: 'msg-1', text: 'delegate' });
  protocol.lines(lines);
  protocol.ended();
  return heard;
}

describe('Claude Code subagents in stream-json (in-process, frames of the real CLI)', function () {
  it('a foreground subagent: the main conversation keeps the Agent call, its result and its own reply', function () {
    const heard = hear(captured('foreground'));
    expect(heard.outputs.map((o) => o.kind)).to.deep.equal(['tool_call', 'tool_result', 'assistant']);
    expect(heard.outputs[0].text).to.match(/^Agent /);
    expect(heard.outputs[0].data).to.include({ tool_use_id: 'toolu_8', name: 'Agent' });
    expect(heard.outputs[1].data).to.include({ tool_use_id: 'toolu_8' });
    expect(heard.outputs[1].text).to.include('Sub tool said');
    expect(heard.outputs[2].text).to.equal('Main says: done');
    expect(heard.turnEnds).to.equal(1);
    expect(heard.turnsBegun).to.equal(0);
  });

  it('a foreground subagent: its prompt, tool calls, results, reply and end are its own, under its Agent call', function () {
    const heard = hear(captured('foreground'));
    const agent = 'a1c52de08d6d7bd0b';
    expect(heard.subagents.every((s) => s.agent_id === agent && s.parent_tool_use_id === 'toolu_8')).to.equal(true);
    expect(heard.subagents.map((s) => [s.kind, s.text ?? s.data?.status])).to.deep.equal([
      ['start', 'sub: run: echo hi'],
      ['user', 'sub: run: echo hi'],
      ['tool_call', 'Bash {"command":"echo hi","description":"run it"}'],
      ['tool_result', 'hi'],
      ['assistant', 'Sub tool said: "hi"'],
      ['turn_end', 'completed'],
    ]);
    expect(heard.subagents[0].data).to.include({ description: 'Look something up', subagent_type: 'general-purpose' });
    expect(heard.subagents.at(-1)!.data).to.include({ summary: 'Sub tool said: "hi"' });
  });

  it('a background subagent: its reply is its own, and the turn Claude Code begins when it is done is a turn', function () {
    const heard = hear(captured('background'));
    const agent = 'a8b3218d12750c53c';
    // The message's turn ends; the program begins one of its own (the task notification), which ends too.
    expect(heard.turnsBegun).to.equal(1);
    expect(heard.turnEnds).to.equal(2);
    expect(heard.outputs.filter((o) => o.kind === 'assistant').map((o) => o.text)).to.not.include(
      'Subagent found: the answer',
    );
    expect(
      heard.subagents.map((s) => [s.agent_id, s.parent_tool_use_id, s.kind, s.text ?? s.data?.status]),
    ).to.deep.equal([
      [agent, 'toolu_2', 'start', 'sub: the answer'],
      [agent, 'toolu_2', 'assistant', 'Subagent found: the answer'],
      [agent, 'toolu_2', 'turn_end', 'completed'],
    ]);
  });
});

describe('Claude Code compaction in stream-json (in-process)', function () {
  it('a compact_boundary is a notice marked as a compaction, with its trigger and the tokens it held', function () {
    const frames = [
      { type: 'system', subtype: 'init', session_id: 's1', tools: [], model: 'pretend-1' },
      {
        type: 'system',
        subtype: 'compact_boundary',
        session_id: 's1',
        uuid: 'b1',
        compact_metadata: { trigger: 'manual', pre_tokens: 51234 },
      },
      { type: 'system', subtype: 'compact_boundary', session_id: 's1', uuid: 'b2', compact_metadata: {} },
    ].map((f) => JSON.stringify(f));
    const notices = hear(frames).outputs.filter((o) => o.kind === 'notice');
    expect(notices).to.deep.equal([
      {
        kind: 'notice',
        text: 'conversation compacted (manual)',
        data: { compaction: true, trigger: 'manual', pre_tokens: 51234 },
      },
      { kind: 'notice', text: 'conversation compacted (auto)', data: { compaction: true, trigger: 'auto' } },
    ]);
  });
});

describe("a session's subagent transcripts (in-process)", function () {
  let dir: string;
  let transcript: Transcript;
  let writer: TranscriptWriter;
  let running: boolean;
  let subagents: Subagents;

  beforeEach(function () {
    dir = tempDir('ctl-subagents-');
    transcript = new Transcript(dir);
    writer = new TranscriptWriter(transcript, { sessionId: 's1', logger, written: () => undefined });
    running = true;
    subagents = new Subagents(dir, writer, () => running);
  });

  afterEach(function () {
    subagents.closeAll();
    transcript.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Everything written so far is on disk. */
  const written = () => new Promise<void>((resolve) => writer.inOrder(resolve));

  function noAgent(id: string): Problem {
    try {
      subagents.get(id);
    } catch (err) {
      expect(err).to.be.instanceOf(Problem);
      return err as Problem;
    }
    throw new Error(`subagent ${id} was found`);
  }

  it('is empty for a session that started none, and a 404 for an id it has not', function () {
    expect(subagents.list()).to.deep.equal([]);
    expect(noAgent('a123').code).to.equal('agent-not-found');
    expect(noAgent('../../etc').code).to.equal('agent-not-found');
  });

  it('lists each subagent with its call, oldest first, and keeps its entries apart from the session', async function () {
    for (const output of hear(captured('foreground')).subagents) subagents.record(output);
    subagents.record({ agent_id: 'b2', parent_tool_use_id: 'toolu_99', kind: 'user', text: 'second' });
    await written();
    expect(subagents.list()).to.deep.equal([
      { agent_id: 'a1c52de08d6d7bd0b', parent_tool_use_id: 'toolu_8' },
      { agent_id: 'b2', parent_tool_use_id: 'toolu_99' },
    ]);
    const first = subagents.get('a1c52de08d6d7bd0b');
    expect(first.status).to.equal('completed');
    expect(first.messages.map((m) => m.kind)).to.deep.equal([
      'start',
      'user',
      'tool_call',
      'tool_result',
      'assistant',
      'turn_end',
    ]);
    expect(first.messages[4]).to.include({ seq: 5, actor: 'assistant', text: 'Sub tool said: "hi"' });
    expect(subagents.get('b2').status).to.equal('running');
    expect(transcript.head(), "the session's own transcript").to.equal(0);
  });

  it('reads back after the program is gone: one that never ended is stopped', async function () {
    subagents.record({ agent_id: 'b2', parent_tool_use_id: 'toolu_99', kind: 'user', text: 'cut short' });
    subagents.closeAll();
    await written();
    running = false;
    const again = new Subagents(dir, writer, () => false);
    expect(again.list()).to.deep.equal([{ agent_id: 'b2', parent_tool_use_id: 'toolu_99' }]);
    expect(again.get('b2')).to.deep.include({ status: 'stopped' });
    expect(again.get('b2').messages[0]).to.include({ kind: 'user', text: 'cut short', parent_tool_use_id: 'toolu_99' });
  });
});
