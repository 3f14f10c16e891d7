import type { SessionService } from '../sessions/session-service.js';
import type { AgentDefinition } from '../agent-catalog/agent-catalog.js';

/** A message an agent's session is to be told of. */
export interface MailNotice {
  id: string;
  from: string;
  subject: string;
}

/**
 * Mail waiting to be told to an agent's session, by agent. Mail to an agent (by its name, or one of its
 * sessions' names) is noted here as it is sent; the tick wakes a session for it when none runs, and tells it
 * to the first idle one (in memory: a new controller tells only what arrives after it started).
 */
export class MailNotices {
  private readonly byAgent = new Map<string, MailNotice[]>();

  /** Notes mail addressed to an agent or one of its sessions; mail to anyone else is not the tick's. */
  arrived(message: MailNotice & { to: string }, agents: AgentDefinition[], sessions: SessionService): void {
    let agent = agents.find((a) => a.name === message.to);
    if (!agent) {
      const session = sessions.bySessionName(message.to);
      if (session?.record.kind === 'agent') agent = agents.find((a) => a.name === session.record.template);
    }
    if (!agent) return;
    const list = this.byAgent.get(agent.name) ?? [];
    list.push({ id: message.id, from: message.from, subject: message.subject });
    this.byAgent.set(agent.name, list);
  }

  /** How many messages wait, by agent. */
  counts(): Map<string, number> {
    return new Map([...this.byAgent].map(([agent, list]) => [agent, list.length]));
  }

  /** The agent's notices, taken: told once. */
  take(agent: string): MailNotice[] {
    const list = this.byAgent.get(agent) ?? [];
    this.byAgent.delete(agent);
    return list;
  }

  /** What a session is told of its agent's mail (one line). */
  text(notices: MailNotice[]): string {
    const list = notices.map((m) => `${m.id} from ${m.from}: ${m.subject.replace(/\s+/g, ' ')}`).join('; ');
    return `New mail: ${list} (read it: ctl mail read <id>)`;
  }
}
