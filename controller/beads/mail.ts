import type { Bead } from '../../shared/dto/beads.js';
import type {
  MailCountOutputBody,
  MailEventPayload,
  MailReplyInputBody,
  MailSendInputBody,
  Message,
} from '../../shared/dto/mail.js';
import { Problem } from '../../shared/http/problem.js';
import type { BeadsService, IdempotencyKey } from './beads-service.js';
import { randomBytes } from 'node:crypto';
import type { KnownEventType } from '../../shared/events/event-types.js';

const READ = 'read';
const THREAD = 'thread:';
const REPLY_TO = 'reply-to:';

function labelValue(bead: Bead, prefix: string): string | undefined {
  return bead.labels?.find((l) => l.startsWith(prefix))?.slice(prefix.length);
}

/** A message bead as a `Message`. */
export function toMessage(bead: Bead): Message {
  const message: Message = {
    id: bead.id,
    from: bead.from ?? 'human',
    to: bead.assignee ?? '',
    subject: bead.title,
    body: bead.description ?? '',
    created_at: bead.created_at,
    read: bead.labels?.includes(READ) ?? false,
  };
  const thread = labelValue(bead, THREAD);
  if (thread) message.thread_id = thread;
  const replyTo = labelValue(bead, REPLY_TO);
  if (replyTo) message.reply_to = replyTo;
  if (bead.metadata?.rig) message.rig = bead.metadata.rig;
  if (bead.priority !== undefined) message.priority = bead.priority;
  return message;
}

/**
 * Mail: messages are `message` beads (ephemeral, so out of ready and normal lists), the recipient in
 * `assignee`, the subject in `title`, the body in `description`, the thread in a `thread:<id>` label, the
 * message answered in `reply-to:<id>`, and `read` as a label. Archiving closes the bead. Each change records
 * its `bead.*` event and a `mail.*` event with `{rig, message}`.
 */
export class MailService {
  constructor(private readonly beads: BeadsService) {}

  /**
   * The message bead with this id (in `rig`, when one is named); 404 `mail-not-found` for anything else. One
   * store holds every rig's mail, so a rig picks among messages rather than among stores.
   */
  bead(id: string, rig?: string): Bead {
    const bead = this.beads.find(id);
    if (!bead || bead.issue_type !== 'message')
      throw new Problem('mail-not-found', `not_found: message not found: ${id}`);
    if (rig !== undefined && (bead.metadata?.rig ?? '') !== rig)
      throw new Problem('mail-not-found', `not_found: message not found in rig ${rig}: ${id}`);
    return bead;
  }

  get(id: string, rig?: string): Message {
    return toMessage(this.bead(id, rig));
  }

  async send(input: MailSendInputBody, key?: IdempotencyKey): Promise<{ message: Message; replayed: boolean }> {
    const thread = randomBytes(6).toString('hex');
    const { bead, replayed } = await this.beads.create(
      {
        title: input.subject,
        type: 'message',
        ephemeral: true,
        assignee: input.to,
        from: input.from ?? 'human',
        description: input.body,
        labels: [`${THREAD}${thread}`],
        metadata: input.rig ? { rig: input.rig } : {},
      },
      key,
    );
    const message = toMessage(bead);
    if (!replayed) await this.record('mail.sent', bead, message.from);
    return { message, replayed };
  }

  /** The inbox: open messages (unread only, unless `status` is `all`), newest first. */
  list(query: { agent?: string; status?: string; rig?: string; limit: number; before?: string }): {
    items: Message[];
    total: number;
    more: boolean;
  } {
    if (query.status !== undefined && query.status !== 'unread' && query.status !== 'all') {
      const message = 'status must be unread or all';
      throw new Problem('validation-failed', `invalid: ${message}`, {
        errors: [{ location: 'query.status', message, value: query.status }],
      });
    }
    const unreadOnly = query.status !== 'all';
    const page = this.beads.list({
      type: 'message',
      assignee: query.agent,
      includeEphemeral: true,
      limit: query.limit,
      before: query.before,
      withoutLabel: unreadOnly ? READ : undefined,
      metadata: query.rig === undefined ? undefined : { rig: query.rig },
    });
    return { items: page.items.map(toMessage), total: page.total, more: page.more };
  }

  count(query: { agent?: string; rig?: string }): MailCountOutputBody {
    const all = this.beads.list({
      type: 'message',
      assignee: query.agent,
      includeEphemeral: true,
      limit: 0,
      metadata: query.rig === undefined ? undefined : { rig: query.rig },
    });
    const unread = this.beads.list({
      type: 'message',
      assignee: query.agent,
      includeEphemeral: true,
      limit: 0,
      withoutLabel: READ,
      metadata: query.rig === undefined ? undefined : { rig: query.rig },
    });
    return { total: all.total, unread: unread.total };
  }

  /** Every message of a thread (by thread id, or by the id of one of its messages), oldest first. */
  /**
   * A page of a thread: its newest `limit` messages below `before` (a message id), oldest first, with how many
   * the thread holds and whether older ones remain.
   */
  thread(
    id: string,
    rig: string | undefined,
    page: { limit: number; before?: string },
  ): { items: Message[]; total: number; more: boolean } {
    const byMessage = this.beads.find(id);
    const thread = byMessage?.issue_type === 'message' ? labelValue(byMessage, THREAD) : id;
    const found = this.beads.list({
      type: 'message',
      label: `${THREAD}${thread}`,
      includeClosed: true,
      includeEphemeral: true,
      limit: page.limit,
      before: page.before,
      metadata: rig === undefined ? undefined : { rig },
    });
    if (found.total === 0) {
      throw new Problem(
        'mail-not-found',
        `not_found: no thread or message ${id}${rig === undefined ? '' : ` in rig ${rig}`}`,
      );
    }
    return { items: found.items.reverse().map(toMessage), total: found.total, more: found.more };
  }

  async markRead(id: string, rig?: string): Promise<void> {
    const bead = this.bead(id, rig);
    if (bead.labels?.includes(READ)) return;
    const updated = await this.beads.update(id, { addLabels: [READ] });
    await this.record('mail.read', updated, updated.assignee);
  }

  async markUnread(id: string, rig?: string): Promise<void> {
    const bead = this.bead(id, rig);
    if (!bead.labels?.includes(READ)) return;
    const updated = await this.beads.update(id, { removeLabels: [READ] });
    await this.record('mail.marked_unread', updated, updated.assignee);
  }

  /** Archives (closes) a message; archiving an archived one changes nothing. */
  async archive(id: string, rig?: string): Promise<void> {
    const bead = this.bead(id, rig);
    if (bead.status === 'closed') return;
    const closed = await this.beads.close(id);
    await this.record('mail.archived', closed, closed.assignee);
  }

  async reply(
    id: string,
    input: MailReplyInputBody,
    key?: IdempotencyKey,
    rig?: string,
  ): Promise<{ message: Message; replayed: boolean }> {
    const original = this.bead(id, rig);
    const originalMessage = toMessage(original);
    const subject =
      input.subject && input.subject.trim() !== ''
        ? input.subject
        : /^re:/i.test(originalMessage.subject)
          ? originalMessage.subject
          : `Re: ${originalMessage.subject}`;
    const from = input.from ?? (originalMessage.to || 'human');
    const { bead, replayed } = await this.beads.create(
      {
        title: subject,
        type: 'message',
        ephemeral: true,
        assignee: originalMessage.from,
        from,
        description: input.body,
        labels: [`${THREAD}${originalMessage.thread_id ?? original.id}`, `${REPLY_TO}${original.id}`],
        metadata: originalMessage.rig ? { rig: originalMessage.rig } : {},
      },
      key,
    );
    const message = toMessage(bead);
    if (!replayed) await this.record('mail.replied', bead, from);
    return { message, replayed };
  }

  /** Deletes a message as archiving does (closes it); deleting a closed one changes nothing. */
  async delete(id: string, rig?: string): Promise<void> {
    const bead = this.bead(id, rig);
    if (bead.status === 'closed') return;
    const closed = await this.beads.close(id);
    await this.record('mail.deleted', closed, closed.assignee);
  }

  private async record(
    type: Extract<KnownEventType, `mail.${string}`>,
    bead: Bead,
    actor: string | undefined,
  ): Promise<void> {
    const message = toMessage(bead);
    const payload: MailEventPayload = { rig: message.rig ?? '', message };
    await this.beads.recordEvent({ type, actor: actor || 'api', subject: bead.id, payload });
  }
}
