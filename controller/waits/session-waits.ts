import type { Logger } from 'pino';
import type { Bead } from '../../shared/dto/beads.js';
import type { SessionWaitInputBody, WaitView } from '../../shared/dto/formulas.js';
import type { EventLog } from '../../shared/events/event-log.js';
import { Problem } from '../../shared/http/problem.js';
import type { BeadsService } from '../beads/beads-service.js';
import type { Session } from '../sessions/session.js';

/** The label of a session's dependency wait (a `gate` bead, as the reference keeps them). */
export const SESSION_WAIT_LABEL = 'ctl:wait';
/** Metadata of a session wait, named as the reference names them. */
const M = {
  session: 'session_id',
  sessionName: 'session_name',
  kind: 'kind',
  state: 'state',
  deps: 'dep_ids',
  mode: 'dep_mode',
  nudge: 'nudge_id',
  reason: 'ctl.wait_reason',
} as const;
/** At most this many beads one wait watches. */
const MAX_DEPS = 100;

/** What session waits need of the city: its beads, its open sessions, and its log. */
export interface SessionWaitsHost {
  beads: BeadsService;
  /** An open session by id, name or alias. */
  openSession(idOrName: string): Session | undefined;
  log: EventLog;
  logger?: Logger;
}

/**
 * Session dependency waits: a session waits for beads to close — all of them, or `any` — and is nudged (sent a
 * message, woken if it sleeps) when they have, with the wait's note; then the wait is closed. Kept as `gate`
 * beads labelled `ctl:wait` (state `pending`, `ready`, `closed`, `canceled` or `failed`), so they outlive the
 * controller: pending ones are looked at again when it starts, in case their beads closed meanwhile.
 */
export class SessionWaits {
  /** Waits being delivered now: two beads closing at once must not nudge twice. */
  private readonly delivering = new Set<string>();

  constructor(private readonly host: SessionWaitsHost) {
    host.beads.onClosed((bead) => this.closed(bead));
  }

  /** Registers a wait of session `sessionRef` on `body.on_beads`; satisfied at once when they are closed already. */
  async register(sessionRef: string, body: SessionWaitInputBody): Promise<Bead> {
    const session = this.host.openSession(sessionRef);
    if (!session) throw new Problem('session-not-found', `not_found: no open session named ${sessionRef}`);
    const deps = [...new Set(body.on_beads.map((id) => id.trim()).filter(Boolean))];
    if (deps.length === 0 || deps.length > MAX_DEPS) {
      throw new Problem('validation-failed', `invalid: a wait watches 1 to ${MAX_DEPS} beads`, {
        errors: [{ location: 'body.on_beads', message: `name 1 to ${MAX_DEPS} beads` }],
      });
    }
    for (const id of deps) this.host.beads.get(id);
    const mode = body.any ? 'any' : 'all';
    const { bead } = await this.host.beads.create({
      title: `${session.record.session_name} waits for ${mode === 'any' ? 'any of ' : ''}${deps.join(', ')}`,
      type: 'gate',
      ...(body.note ? { description: body.note } : {}),
      labels: [SESSION_WAIT_LABEL, `session:${session.id}`],
      metadata: {
        [M.session]: session.id,
        [M.sessionName]: session.record.session_name,
        [M.kind]: 'deps',
        [M.state]: 'pending',
        [M.deps]: deps.join(','),
        [M.mode]: mode,
      },
    });
    await this.host.log.append({
      type: 'wait.registered',
      actor: 'ctl',
      subject: bead.id,
      message: `${session.record.session_name} waits for ${deps.join(', ')}`,
      payload: { wait_id: bead.id, session_id: session.id, dep_ids: deps, dep_mode: mode },
    });
    return (await this.settleIfMet(bead)) ?? bead;
  }

  /** Cancels a pending wait: it is closed and never nudges. */
  async cancel(id: string): Promise<Bead> {
    const wait = this.pending(id);
    const closed = await this.finish(wait, 'canceled', 'canceled');
    await this.record('wait.canceled', closed, 'canceled');
    return closed;
  }

  /** Marks a pending wait ready by hand: its session is nudged now, whatever its beads. */
  async ready(id: string): Promise<Bead> {
    return this.deliver(this.pending(id), 'marked ready by hand');
  }

  /** Pending waits whose beads closed while no controller ran: nudged now (off the caller; failures logged). */
  recheckSoon(): void {
    void (async () => {
      for (const wait of this.list({ state: 'pending', limit: 10_000 })) await this.settleIfMet(wait);
    })().catch((err: unknown) => this.host.logger?.error({ err }, 'could not look at pending session waits'));
  }

  /** The session waits, newest first: open ones unless `state` asks for others (`all`). */
  list(options: { state?: string; session?: string; limit: number }): Bead[] {
    const includeClosed = options.state !== undefined && !['pending', 'ready'].includes(options.state);
    return this.host.beads
      .list({ type: 'gate', label: SESSION_WAIT_LABEL, includeClosed, limit: options.limit })
      .items.filter((b) => !options.session || b.metadata?.[M.session] === options.session)
      .filter((b) => !options.state || options.state === 'all' || b.metadata?.[M.state] === options.state);
  }

  get(id: string): Bead | undefined {
    const bead = this.host.beads.find(id);
    return bead && isSessionWait(bead) ? bead : undefined;
  }

  private pending(id: string): Bead {
    const wait = this.get(id);
    if (!wait) throw new Problem('wait-not-found', `not_found: wait not found: ${id}`);
    if (wait.metadata?.[M.state] !== 'pending') {
      throw new Problem('conflict-wrong-state', `conflict: wait ${id} is ${wait.metadata?.[M.state]}, not pending`);
    }
    return wait;
  }

  private async closed(bead: Bead): Promise<void> {
    if (isSessionWait(bead)) return;
    for (const wait of this.list({ state: 'pending', limit: 10_000 })) {
      if (depsOf(wait).includes(bead.id)) await this.settleIfMet(wait);
    }
  }

  /** Nudges the session when the wait's beads are closed (all, or any); the wait as it then is, or undefined. */
  private async settleIfMet(wait: Bead): Promise<Bead | undefined> {
    const deps = depsOf(wait);
    const closed = deps.filter((id) => this.host.beads.find(id)?.status === 'closed');
    const met = wait.metadata?.[M.mode] === 'any' ? closed.length > 0 : closed.length === deps.length;
    if (!met) return undefined;
    return this.deliver(wait, `${closed.join(', ')} closed`);
  }

  /** Marks the wait ready, tells its session (woken if it sleeps), and closes it; failed when the session is gone. */
  private async deliver(wait: Bead, why: string): Promise<Bead> {
    if (this.delivering.has(wait.id)) return wait;
    this.delivering.add(wait.id);
    try {
      return await this.deliverOnce(wait, why);
    } finally {
      this.delivering.delete(wait.id);
    }
  }

  private async deliverOnce(wait: Bead, why: string): Promise<Bead> {
    const current = this.host.beads.find(wait.id);
    if (current?.metadata?.[M.state] !== 'pending') return current ?? wait;
    const ready = await this.host.beads.update(wait.id, { metadata: { [M.state]: 'ready' } });
    const sessionId = wait.metadata?.[M.session] ?? '';
    const session = this.host.openSession(sessionId);
    if (!session) {
      const failed = await this.finish(ready, 'failed', `session ${sessionId} is no longer open`);
      await this.record('wait.failed', failed, `session ${sessionId} is no longer open`);
      return failed;
    }
    const note = wait.description ? ` ${wait.description}` : '';
    const text = `Wait ${wait.id} is over: ${why} (you waited for ${depsOf(wait).join(', ')}).${note}`;
    const nudge = session.enqueue(text.replace(/\s+/g, ' '), 'default', { wake: `wait ${wait.id} is over` });
    const done = await this.finish(ready, 'closed', why, { [M.nudge]: nudge });
    await this.record('wait.ready', done, why);
    return done;
  }

  private finish(wait: Bead, state: string, reason: string, extra: Record<string, string> = {}): Promise<Bead> {
    return this.host.beads.update(wait.id, {
      status: 'closed',
      metadata: { [M.state]: state, [M.reason]: reason, ...extra },
    });
  }

  private async record(type: 'wait.ready' | 'wait.canceled' | 'wait.failed', wait: Bead, reason: string) {
    await this.host.log.append({
      type,
      actor: 'ctl',
      subject: wait.id,
      message: `wait ${wait.id}: ${reason}`,
      payload: {
        wait_id: wait.id,
        session_id: wait.metadata?.[M.session] ?? '',
        dep_ids: depsOf(wait),
        dep_mode: wait.metadata?.[M.mode] ?? 'all',
        reason,
        ...(wait.metadata?.[M.nudge] ? { nudge_id: wait.metadata[M.nudge] } : {}),
      },
    });
  }
}

export function isSessionWait(bead: Bead): boolean {
  return bead.issue_type === 'gate' && (bead.labels ?? []).includes(SESSION_WAIT_LABEL);
}

function depsOf(wait: Bead): string[] {
  return (wait.metadata?.[M.deps] ?? '').split(',').filter(Boolean);
}

/** A session wait as `GET /waits` shows it. */
export function sessionWaitView(wait: Bead): WaitView {
  const meta = wait.metadata ?? {};
  return {
    id: wait.id,
    session_id: meta[M.session] ?? '',
    ...(meta[M.sessionName] ? { session_name: meta[M.sessionName] } : {}),
    kind: 'deps',
    state: meta[M.state] ?? 'pending',
    status: wait.status === 'closed' ? 'closed' : 'open',
    dep_ids: depsOf(wait),
    dep_mode: meta[M.mode] ?? 'all',
    created_at: wait.created_at,
    labels: wait.labels ?? [],
    ...(wait.description ? { note: wait.description } : {}),
    ...(meta[M.nudge] ? { nudge_id: meta[M.nudge] } : {}),
    ...(meta[M.reason] ? { reason: meta[M.reason] } : {}),
  };
}
