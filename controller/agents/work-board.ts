import type { Bead } from '../../shared/dto/beads.js';
import type { EventRecord } from '../../shared/events/record.js';
import type { BeadReads, BeadsService } from '../beads/beads-service.js';
import { ASSIGNED_SESSION, ROUTED_TO } from '../beads/work-schema.js';

/** Beads read per look at the store (per agent for routed work). */
const READ_LIMIT = 5000;

/**
 * The work the tick routes: ready beads routed to each agent and not yet taken, and the beads each session
 * holds. Read from the store only after someone else changed a bead (every bead event says so), so a tick in a
 * quiet city reads nothing; the tick's own hand-overs and releases are applied to it as they are written, and
 * their events are not news to it. Routed beads are read through the store's metadata index, agent by agent, so
 * a city creating beads nobody routes (or with no agents) reads none of them.
 */
export class WorkBoard {
  private version = 0;
  private readVersion = -1;
  private readonly ready = new Map<string, Bead[]>();
  private readonly holding = new Map<string, Bead[]>();
  /** The tick's own bead writes under way, by bead: the `ctl.assigned_session` each leaves ('' none), in order. */
  private readonly echoes = new Map<string, string[]>();

  constructor(private readonly beads: BeadsService) {}

  /** A bead changed: the next refresh reads the store again. */
  changed(): void {
    this.version++;
  }

  /** The tick is about to write this bead, leaving it held by `assignedSession` ('' none): its event is no news. */
  writing(beadId: string, assignedSession: string): void {
    const pending = this.echoes.get(beadId);
    if (pending) pending.push(assignedSession);
    else this.echoes.set(beadId, [assignedSession]);
  }

  /** The write failed: no event of it will come, and the store may differ from the board. */
  notWritten(beadId: string, assignedSession: string): void {
    const pending = this.echoes.get(beadId);
    const at = pending?.indexOf(assignedSession) ?? -1;
    if (at >= 0) pending!.splice(at, 1);
    if (pending && !pending.length) this.echoes.delete(beadId);
    this.changed();
  }

  /**
   * A `bead.*` event heard: whether it is news, which the next refresh reads. The echo of one of the tick's own
   * writes is not (the board has it already): the next event of that bead, leaving it held as the write did.
   * Anything else is — a write of someone else's between (it fails the match, or the echo it took comes after,
   * unmatched) makes a read, never a change missed. `bead.dead_assignee_reopened` is the tick's own note of a
   * release (its write is the `bead.updated`); a convoy made (sling makes one per sling) changes no work.
   */
  heard(record: EventRecord): boolean {
    if (record.type === 'bead.dead_assignee_reopened') return false;
    const bead = (record.payload as { bead?: Bead } | undefined)?.bead;
    // A new convoy is never work, and its `tracks` edges hold nothing out of ready (ConvoysService).
    if (record.type === 'bead.created' && bead?.issue_type === 'convoy' && !bead.metadata?.[ROUTED_TO]) return false;
    const pending = bead ? this.echoes.get(bead.id) : undefined;
    if (record.type === 'bead.updated' && pending && (bead!.metadata?.[ASSIGNED_SESSION] ?? '') === pending[0]) {
      pending.shift();
      if (!pending.length) this.echoes.delete(bead!.id);
      return false;
    }
    this.changed();
    return true;
  }

  refresh(agents: string[]): void {
    if (this.readVersion === this.version) return;
    this.readVersion = this.version;
    this.ready.clear();
    this.holding.clear();
    const now = new Date().toISOString();
    for (const agent of agents) {
      const routed = this.beads.list({ status: 'open', metadata: { [ROUTED_TO]: agent }, limit: READ_LIMIT }).items;
      // Oldest first, and only what `ready` would hand out: nothing blocking it, not deferred, not taken.
      for (const bead of routed.reverse()) {
        if (bead.assignee || bead.is_blocked || (bead.defer_until !== undefined && bead.defer_until > now)) continue;
        push(this.ready, agent, bead);
      }
    }
    for (const bead of this.beads.list({ status: 'in_progress', limit: READ_LIMIT }).items.reverse()) {
      const session = bead.metadata?.[ASSIGNED_SESSION];
      if (session) push(this.holding, session, bead);
    }
  }

  /** Ready beads routed to `agent` and not taken, oldest first. */
  routedReady(agent: string): Bead[] {
    return this.ready.get(agent) ?? [];
  }

  /** A bead handed to a session: off the agent's ready list. */
  taken(agent: string, beadId: string): void {
    const list = this.ready.get(agent);
    if (list)
      this.ready.set(
        agent,
        list.filter((b) => b.id !== beadId),
      );
  }

  /** Every agent's ready routed beads. */
  allRouted(): ReadonlyMap<string, readonly Bead[]> {
    return this.ready;
  }

  /** The beads each session holds, by session id. */
  allHolding(): ReadonlyMap<string, readonly Bead[]> {
    return this.holding;
  }

  heldBy(sessionId: string): Bead[] {
    return this.holding.get(sessionId) ?? [];
  }

  held(sessionId: string, bead: Bead): void {
    push(this.holding, sessionId, bead);
  }

  released(sessionId: string, bead: Bead): void {
    const list = this.holding.get(sessionId)?.filter((b) => b.id !== bead.id) ?? [];
    if (list.length) this.holding.set(sessionId, list);
    else this.holding.delete(sessionId);
    const agent = bead.metadata?.[ROUTED_TO];
    if (agent && !bead.is_blocked) push(this.ready, agent, bead);
  }
}

/** The bead a session holds (in progress, handed to it), straight from the store's query. */
export function heldBeadOf(beads: Pick<BeadReads, 'list'>, sessionId: string): string | undefined {
  return beads.list({ status: 'in_progress', metadata: { [ASSIGNED_SESSION]: sessionId }, limit: 1 }).items[0]?.id;
}

function push(map: Map<string, Bead[]>, key: string, bead: Bead): void {
  const list = map.get(key);
  if (list) list.push(bead);
  else map.set(key, [bead]);
}
