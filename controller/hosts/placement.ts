import type { HostState } from '../../shared/dto/hosts.js';
import { LOCAL_HOST } from './host.js';

/** What placement sees of a host: the registry's state and counts of it. */
export interface PlacementHost {
  name: string;
  state: HostState;
  /** How many sessions may run there; null: no limit of its own (`local`). */
  slots: number | null;
  /** Sessions whose program runs or is starting there. */
  used: number;
  labels: readonly string[];
  /** Whether its last check found tmux (undefined: not checked, or this machine). */
  tmux?: boolean;
  last_error?: string;
}

/** What a session to place needs. */
export interface PlacementRequest {
  /** The agent's `hosts` (names, labels, `local`); none: `local`. */
  hosts?: readonly string[];
  /** Its program runs under tmux: only a host that has tmux will do. */
  tmux: boolean;
}

export type Placement = { host: string } | { reason: string };

/**
 * The sessions placed on each host by one run of the tick, which the hosts' `used` counts do not have yet: two
 * new sessions in one tick never take the same last slot.
 */
export class PlacementLedger {
  private readonly placed = new Map<string, number>();

  count(host: string): number {
    return this.placed.get(host) ?? 0;
  }

  add(host: string): void {
    this.placed.set(host, this.count(host) + 1);
  }
}

/**
 * Where a new session of an agent runs: of the hosts its `hosts` list names (a label naming every host that has
 * it; `local`, this machine, the default), those that are `up`, have a free slot and — for a tmux session —
 * tmux, the least used first (sessions over slots; ties in the list's order). `local` has no limit of its own:
 * it is ranked as one slot that is never full, so it takes its turn among the others and takes what they have
 * no room for. A host `down` is never used, nor one not checked yet (`unknown`): a check runs as soon as a host
 * is configured, and its answer makes the tick place again. With none, a reason a person can act on, naming
 * what each candidate lacks. Records the choice in `ledger`.
 */
export function placeSession(
  request: PlacementRequest,
  hosts: readonly PlacementHost[],
  ledger: PlacementLedger,
): Placement {
  const list = request.hosts?.length ? request.hosts : [LOCAL_HOST];
  const candidates: PlacementHost[] = [];
  const unknownNames: string[] = [];
  for (const entry of list) {
    const named = hosts.filter((h) => h.name === entry || (entry !== LOCAL_HOST && h.labels.includes(entry)));
    const found = entry === LOCAL_HOST && named.length === 0 ? [localHost(hosts)] : named;
    if (found.length === 0) unknownNames.push(entry);
    for (const host of found) if (!candidates.some((c) => c.name === host.name)) candidates.push(host);
  }
  const why: string[] = [];
  const usable: { host: PlacementHost; load: number; order: number }[] = [];
  for (const [order, host] of candidates.entries()) {
    const taken = host.used + ledger.count(host.name);
    const lacks = lacking(host, taken, request.tmux);
    if (lacks) {
      why.push(lacks);
      continue;
    }
    usable.push({ host, load: taken / (host.slots ?? 1), order });
  }
  usable.sort((a, b) => a.load - b.load || a.order - b.order);
  const chosen = usable[0];
  if (chosen) {
    ledger.add(chosen.host.name);
    return { host: chosen.host.name };
  }
  for (const name of unknownNames) why.push(`${name} names no host and no host's label`);
  return { reason: `no host in its hosts = [${list.join(', ')}] can take a session: ${why.join('; ')}` };
}

/** Why a host cannot take a session now (`taken` of its slots counted), or undefined when it can. */
export function lacking(host: PlacementHost, taken: number, tmux: boolean): string | undefined {
  if (host.state === 'down') return `${host.name} is down (${host.last_error ?? 'its check failed'})`;
  if (host.state === 'unknown') return `${host.name} is not checked yet`;
  if (host.slots !== null && taken >= host.slots) {
    return `${host.name} has no free slot (${taken} of ${host.slots} used)`;
  }
  if (tmux && host.name !== LOCAL_HOST && host.tmux !== true) {
    return `${host.name} has no tmux, which its provider's tmux runtime needs`;
  }
  return undefined;
}

function localHost(hosts: readonly PlacementHost[]): PlacementHost {
  return (
    hosts.find((h) => h.name === LOCAL_HOST) ?? { name: LOCAL_HOST, state: 'up', slots: null, used: 0, labels: [] }
  );
}
