import type { Bead } from '../../shared/dto/beads.js';
import type { Message } from '../../shared/dto/mail.js';
import type { SessionPrimeResponse } from '../../shared/dto/sessions.js';
import { Problem } from '../../shared/http/problem.js';
import type { BeadReads } from '../beads/beads-service.js';
import type { MailService } from '../beads/mail.js';
import type { Session } from '../sessions/session.js';
import type { SessionService } from '../sessions/session-service.js';
import { promptFor, type AgentDefinition } from '../agent-catalog/agent-catalog.js';
import { heldBeadOf } from './work-board.js';

/** Unread messages a briefing lists (the count says how many there are in all). */
const MAIL_SHOWN = 20;

/** What a briefing reads of the city. */
export interface BriefingSources {
  cityName: string;
  sessions: SessionService;
  beads: Pick<BeadReads, 'find' | 'list'>;
  mail: MailService;
  agents: AgentDefinition[];
}

/**
 * An open session, for what an agent's own commands ask or do about it (`ctl prime`, `ctl hook`, `ctl bead
 * close`): one that is closed or unknown is gone — a 404, and nothing else changes.
 */
export function openSessionOf(sessions: SessionService, idOrName: string): Session {
  const session = sessions.find(idOrName);
  if (session.state === 'closed') {
    throw new Problem('session-not-found', `not_found: session ${session.id} is closed`);
  }
  return session;
}

/** What a session needs in a turn: its role, its work, its mail; and all of it as text. */
export function briefSession(sources: BriefingSources, idOrName: string): SessionPrimeResponse {
  const session = openSessionOf(sources.sessions, idOrName);
  const record = session.record;
  const agent = record.kind === 'agent' ? sources.agents.find((a) => a.name === record.template) : undefined;
  const beadId = heldBeadOf(sources.beads, session.id);
  const bead = beadId === undefined ? undefined : sources.beads.find(beadId);
  const prompt =
    agent &&
    promptFor(agent, {
      city: sources.cityName,
      session: record.session_name,
      bead: beadId,
      workDir: sources.sessions.workDirOf(record),
    });
  const recipients = [...new Set([record.kind === 'agent' ? record.template : undefined, record.session_name])];
  const unread: Message[] = [];
  let total = 0;
  for (const to of recipients) {
    if (to === undefined) continue;
    const page = sources.mail.list({ agent: to, limit: MAIL_SHOWN });
    unread.push(...page.items);
    total += page.total;
  }
  unread.sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : 0));
  const mail = unread.slice(0, MAIL_SHOWN);
  const body: SessionPrimeResponse = {
    session_id: session.id,
    session_name: record.session_name,
    mail,
    unread: total,
    text: '',
  };
  if (record.kind === 'agent') body.agent = record.template;
  if (prompt !== undefined) body.prompt = prompt;
  if (bead) body.bead = bead;
  body.text = briefingText(sources.cityName, body);
  return body;
}

/** The briefing as an agent reads it: Markdown, its commands spelled out. */
export function briefingText(city: string, brief: Omit<SessionPrimeResponse, 'text'>): string {
  const who = brief.agent !== undefined ? `agent ${brief.agent}` : 'a session';
  const parts = [`# You are ${who} of city ${city} (session ${brief.session_name})`];
  if (brief.prompt !== undefined) parts.push(brief.prompt.trim());
  parts.push(`## Your work now\n\n${workText(brief.bead)}`);
  parts.push(`## Unread mail\n\n${mailText(brief.mail, brief.unread)}`);
  return `${parts.join('\n\n')}\n`;
}

function workText(bead: Bead | undefined): string {
  if (!bead) return 'No bead is assigned to you now (`ctl hook` says when one is).';
  const lines = [`Bead ${bead.id}: ${bead.title}`];
  if (bead.description?.trim()) lines.push('', bead.description.trim());
  lines.push(
    '',
    `Details: \`ctl bead show ${bead.id}\`. When it is done: \`ctl bead close ${bead.id} --reason "<what you did>"\`.`,
  );
  return lines.join('\n');
}

function mailText(mail: Message[], unread: number): string {
  if (unread === 0) return 'No unread mail.';
  const lines = mail.map((m) => `- ${m.id} from ${m.from}: ${m.subject.replace(/\s+/g, ' ')}`);
  if (unread > mail.length) lines.push(`- … and ${unread - mail.length} more (\`ctl mail check\`)`);
  lines.push('', 'Read one with `ctl mail read <id>`; answer with `ctl mail reply <id> --body "…"`.');
  return lines.join('\n');
}
