import type { Bead } from '../../shared/dto/beads.js';
import type { BeadReads, BeadsService } from '../beads/beads-service.js';

/** The agent a bead is routed to (stamped by sling). */
export const ROUTED_TO = 'ctl.routed_to';
/** The session the tick handed a bead to (its id; the bead's assignee is its session name). */
export const ASSIGNED_SESSION = 'ctl.assigned_session';
/** How a slung bead's work gets into its base (`direct`, `local`, `mr`), as the reference names it. */
export const MERGE_STRATEGY = 'merge_strategy';

/** Beads read per look at the store (per agent for routed work). */
const READ_LIMIT = 5000;

/**
 * The work the tick routes: ready beads routed to each agent and not yet taken, and the beads each session
 * holds. Read from the store only after a bead changed (every bead event says so), so a tick in a quiet city
 * reads nothing; and routed beads through the store's metadata index, agent by agent, so a city creating beads
 * nobody routes (or with no agents) reads none of them.
 */
export class WorkBoard {
  private version = 0;
  private readVersion = -1;
  private readonly ready = new Map<string, Bead[]>();
  private readonly holding = new Map<string, Bead[]>();

  constructor(private readonly beads: BeadsService) {}

  /** A bead changed: the next refresh reads the store again. */
  changed(): void {
    this.version++;
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
