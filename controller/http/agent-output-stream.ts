import type { Middleware } from 'koa';
import type { EventRecord } from '../../shared/events/record.js';
import type { StreamSettings } from '../../shared/events/stream-settings.js';
import { decodeSegment } from '../../shared/http/path-segment.js';
import { Problem } from '../../shared/http/problem.js';
import { refusedUnlessRead, SseStream } from '../../shared/http/sse.js';
import type { CityRuntime } from '../city-runtime.js';
import { outputSession, requireAgent } from '../agents/agent-views.js';
import type { Session } from '../sessions/session.js';
import { turnOf } from '../sessions/transcript.js';

/** A stream starts with this many of the newest transcript entries of the agent's session. */
const BACKLOG = 100;
const REPLAY_BATCH = 500;

/**
 * `GET /v0/city/{cityName}/agent/{base}/output/stream` (`stream-agent-output`) and `…/agent/{dir}/{base}/output/
 * stream` (`stream-agent-output-qualified`), also at `…/agents/…`: an agent's conversation as Server-Sent Events.
 * `turn` frames (data: an AgentOutputResponse holding one turn; `id:` `<session id>:<transcript seq>`), from the
 * last turns of its running session — or, when none runs, of its latest session, with `CTL-Agent-Status: stopped`
 * before the first frame — then live, from every session of the agent, including ones that start later. An
 * unknown agent, or one that has never run, is a 404 before any 200. `Last-Event-ID` resumes after that entry.
 */
export function agentOutputStream(city: CityRuntime, settings: StreamSettings): Middleware {
  const prefixes = ['agent', 'agents'].map((word) => `/v0/city/${encodeURIComponent(city.name)}/${word}/`);
  return async (ctx, next) => {
    const prefix = prefixes.find((p) => ctx.path.startsWith(p));
    if (!prefix || !ctx.path.endsWith('/output/stream')) {
      await next();
      return;
    }
    const segments = ctx.path.slice(prefix.length, -'/output/stream'.length).split('/');
    if (segments.length > 2 || segments.some((s) => s === '')) {
      await next();
      return;
    }
    if (refusedUnlessRead(ctx)) return;
    // Everything that can fail happens before the 200 is committed.
    const agent = requireAgent(city, segments.map(decodeSegment).join('/'));
    const first = outputSession(city, agent);
    const running = city.sessions.agentSessions(agent.name).some((s) => s.running);
    if (!first || (!running && first.transcript.head() === 0)) {
      throw new Problem(
        'agent-not-found',
        `not_found: agent ${agent.name} has no output: none of its sessions has run`,
      );
    }
    const resume = /^([^:]+):(\d+)$/.exec(ctx.get('Last-Event-ID').trim());
    let after = Math.max(0, first.transcript.head() - BACKLOG);
    if (resume && resume[1] === first.id) after = Number(resume[2]);

    if (!running) ctx.set('CTL-Agent-Status', 'stopped');
    const stream = new SseStream(ctx, settings);
    const lastSeq = new Map<string, number>([[first.id, after]]);
    const frame = (session: Session, record: EventRecord) => {
      if (record.seq <= (lastSeq.get(session.id) ?? 0)) return;
      lastSeq.set(session.id, record.seq);
      const turn = turnOf(record);
      if (!turn) return;
      const data = {
        agent: agent.name,
        format: 'conversation',
        session_id: session.id,
        turns: [{ role: turn.role, text: turn.text, timestamp: turn.timestamp }],
      };
      stream.send('turn', JSON.stringify(data), `${session.id}:${record.seq}`);
    };
    // Live entries wait here while the history replays, so nothing overtakes it.
    let queued: (() => void)[] | undefined = [];
    const followed = new Set<string>();
    const follow = (session: Session) => {
      if (followed.has(session.id)) return;
      followed.add(session.id);
      if (!lastSeq.has(session.id)) lastSeq.set(session.id, session.transcript.head());
      const listener = (record: EventRecord) => {
        if (queued) queued.push(() => frame(session, record));
        else if (stream.keepingUp()) frame(session, record);
      };
      session.on('entry', listener);
      stream.onClose(() => session.off('entry', listener));
    };
    follow(first);
    for (const session of city.sessions.agentSessions(agent.name)) follow(session);
    stream.onClose(
      city.sessions.onOpened((session) => {
        if (session.record.kind === 'agent' && session.record.template === agent.name) follow(session);
      }),
    );

    while (!stream.isClosed) {
      const batch = first.transcript.after(lastSeq.get(first.id) ?? 0, REPLAY_BATCH);
      if (batch.length === 0) break;
      for (const record of batch) {
        frame(first, record);
        await stream.paced();
      }
    }
    for (const run of queued) run();
    queued = undefined;
  };
}
