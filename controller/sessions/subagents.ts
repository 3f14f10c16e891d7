import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { SessionAgentGetResponse, SessionAgentMapping } from '../../shared/dto/sessions.js';
import { Problem } from '../../shared/http/problem.js';
import type { EventRecord } from '../../shared/events/record.js';
import type { SubagentOutput } from './runtime.js';
import { toEntry, Transcript } from './transcript.js';
import type { TranscriptWriter } from './transcript-writer.js';

/** An agent id we keep a folder for: the program's own ids (`a1e2f1900a4a7c736`, `toolu_…`), nothing path-like. */
const AGENT_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** Entries of one subagent read at once (its whole transcript: subagents are short-lived). */
const READ_MAX = 100_000;

/**
 * A session's subagents (Claude Code's Task/Agent tool), each with its own transcript beside the session's:
 * `<session dir>/agents/<agent id>/transcript.jsonl`. Its first entry names the main conversation's tool call
 * that started it; its last, once it ended, its status. The session's own transcript keeps only the call and its
 * result, so what a subagent says is never the session's reply.
 */
export class Subagents {
  /** Transcripts being written while the program runs, by agent id. */
  private readonly open = new Map<string, Transcript>();

  constructor(
    private readonly dir: string,
    private readonly writer: TranscriptWriter,
    private readonly running: () => boolean,
  ) {}

  private get root(): string {
    return join(this.dir, 'agents');
  }

  /** Appends what a subagent did to its transcript, in order with the session's other entries. */
  record(output: SubagentOutput): void {
    if (!AGENT_ID.test(output.agent_id)) return;
    let transcript = this.open.get(output.agent_id);
    if (!transcript) {
      const dir = join(this.root, output.agent_id);
      mkdirSync(dir, { recursive: true });
      transcript = new Transcript(dir);
      this.open.set(output.agent_id, transcript);
    }
    void this.writer.writeTo(transcript, {
      kind: output.kind,
      actor:
        output.kind === 'user' ? 'user' : output.kind === 'turn_end' || output.kind === 'start' ? 'ctl' : 'assistant',
      ...(output.text !== undefined ? { text: output.text } : {}),
      data: { parent_tool_use_id: output.parent_tool_use_id, ...output.data },
    });
  }

  /** The program is gone: its subagents' transcripts are closed once what was heard is written. */
  closeAll(): void {
    const closing = [...this.open.values()];
    this.open.clear();
    this.writer.inOrder(() => {
      for (const transcript of closing) transcript.close();
    });
  }

  /** Every subagent the session started, oldest first, with the tool call that started it. */
  list(): SessionAgentMapping[] {
    if (!existsSync(this.root)) return [];
    const found: { mapping: SessionAgentMapping; ts: string }[] = [];
    for (const id of readdirSync(this.root)) {
      if (!AGENT_ID.test(id)) continue;
      const [first] = this.read(id, 1);
      if (!first) continue;
      const parent = (first.payload as { parent_tool_use_id?: unknown } | undefined)?.parent_tool_use_id;
      found.push({
        mapping: { agent_id: id, parent_tool_use_id: typeof parent === 'string' ? parent : '' },
        ts: first.ts,
      });
    }
    return found.sort((a, b) => a.ts.localeCompare(b.ts)).map((f) => f.mapping);
  }

  /**
   * One subagent's transcript and status: as its end said (`completed`, `failed`, …), else `running` while the
   * program runs, `stopped` once it is gone without saying; a 404 for an agent the session has not started.
   */
  get(agentId: string): SessionAgentGetResponse {
    const records = AGENT_ID.test(agentId) ? this.read(agentId, READ_MAX) : [];
    if (records.length === 0) throw new Problem('agent-not-found', `not_found: session has no subagent ${agentId}`);
    const end = records.findLast((r) => r.type === 'turn_end');
    const said = (end?.payload as { status?: unknown } | undefined)?.status;
    const status = typeof said === 'string' ? said : this.running() ? 'running' : 'stopped';
    return { messages: records.map(toEntry), status };
  }

  /** The first `limit` entries of a subagent's transcript (one being written is read through its writer). */
  private read(agentId: string, limit: number): EventRecord[] {
    const writing = this.open.get(agentId);
    if (writing) return writing.after(0, limit);
    const dir = join(this.root, agentId);
    if (!existsSync(join(dir, 'transcript.jsonl'))) return [];
    const transcript = new Transcript(dir);
    try {
      return transcript.after(0, limit);
    } finally {
      transcript.close();
    }
  }
}
