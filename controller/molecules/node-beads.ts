import type { Bead } from '../../shared/dto/beads.js';
import type { GraphNode } from '../formulas/formula-compile.js';
import { UNTIL } from '../formulas/formula-file.js';
import { ROUTED_TO } from '../beads/work-schema.js';
import * as K from './molecule-keys.js';

/**
 * The metadata a node's bead carries: part of the run, what it is, and all the engine needs to carry it on (a
 * check's command, a gate's settings, a runtime loop's condition and body).
 */
export function nodeMetadata(
  node: GraphNode,
  rootId: string,
  routedTo: string | undefined,
  checksBead: string | undefined,
): Record<string, string> {
  const metadata: Record<string, string> = {
    ...node.metadata,
    [K.ROOT_BEAD_ID]: rootId,
    [K.KIND]: node.kind,
    [K.STEP_REF]: node.id,
    ...(node.scope !== undefined ? { [K.SCOPE_REF]: node.scope } : {}),
  };
  if (node.kind === 'step') {
    metadata[K.ATTEMPT] = '1';
    const routed = node.assignee ?? routedTo;
    if (routed) metadata[ROUTED_TO] = routed;
  }
  if (checksBead) {
    metadata[node.kind === 'bond' ? K.BOND_OF : node.kind === 'children' ? K.WAITS_ON : K.CHECKS] = checksBead;
  }
  if (node.bond) {
    metadata[K.BOND_FOR_EACH] = node.bond.forEach;
    metadata[K.BOND_FORMULA] = node.bond.bond;
    metadata[K.BOND_VARS] = JSON.stringify(node.bond.vars);
    if (node.bond.sequential) metadata[K.BOND_MODE] = 'sequential';
  }
  if (node.waitsOn) metadata[K.WAIT_MODE] = node.waitsOn.mode;
  if (node.check) {
    metadata[K.CHECK_COMMAND] = node.check.command;
    metadata[K.CHECK_TIMEOUT_MS] = String(node.check.timeoutMs);
    metadata[K.CHECK_MAX_ATTEMPTS] = String(node.check.maxAttempts);
  }
  if (node.retry) {
    metadata[K.RETRY_MAX_ATTEMPTS] = String(node.retry.maxAttempts);
    metadata[K.ON_EXHAUSTED] = node.retry.onExhausted;
  }
  if (node.gate) {
    metadata[K.GATE_KIND] = node.gate.kind;
    if (node.gate.durationMs !== undefined) metadata[K.GATE_DURATION_MS] = String(node.gate.durationMs);
    if (node.gate.command) metadata[K.GATE_CHECK] = node.gate.command;
    if (node.gate.intervalMs !== undefined) metadata[K.GATE_INTERVAL_MS] = String(node.gate.intervalMs);
    if (node.gate.timeoutMs !== undefined) metadata[K.GATE_TIMEOUT_MS] = String(node.gate.timeoutMs);
  }
  if (node.loop) {
    metadata[K.LOOP_UNTIL] = node.loop.until;
    metadata[K.LOOP_MAX] = String(node.loop.max);
    metadata[K.LOOP_ITERATION] = '1';
    metadata[K.LOOP_BODY] = JSON.stringify(node.loop.body);
  }
  return metadata;
}

/** The bead type of a node: nodes the controller closes are `step` beads, never ready work for an agent. */
export function nodeType(node: GraphNode): string {
  return node.kind === 'step' ? node.type : node.kind === 'gate' ? 'gate' : 'step';
}

/** A runtime loop's group, read from its bead. */
export interface LoopState {
  until: string;
  max: number;
  iteration: number;
  body: GraphNode[];
  /** Where iteration `n`'s step ids start: `<loop>.iter<n>.`. */
  prefix: (n: number) => string;
}

export function loopState(group: Bead): LoopState | undefined {
  const meta = group.metadata ?? {};
  if (!meta[K.LOOP_UNTIL]) return undefined;
  const ref = meta[K.STEP_REF] ?? group.id;
  return {
    until: meta[K.LOOP_UNTIL],
    max: Number(meta[K.LOOP_MAX] ?? '1'),
    iteration: Number(meta[K.LOOP_ITERATION] ?? '1'),
    body: JSON.parse(meta[K.LOOP_BODY] ?? '[]') as GraphNode[],
    prefix: (n) => `${ref}.iter${n}.`,
  };
}

/**
 * Whether a loop's `until` holds over one finished iteration: `<step>.status` is `complete` (closed, not
 * failed) or `failed`; `<step>.output.<key>` is the metadata the agent set on the step's bead (`<key>`, or
 * `output.<key>`). `step` names the body's last work step. `beads` are the iteration's, by relative step id.
 */
export function untilHolds(until: string, body: GraphNode[], beads: Map<string, Bead>): boolean {
  const m = UNTIL.exec(until);
  if (!m) return false;
  const [, ref, field, op, raw] = m as unknown as [string, string, string, string, string];
  const id = ref === 'step' ? body.filter((n) => n.kind === 'step').at(-1)?.id : ref;
  const bead = id === undefined ? undefined : beads.get(id);
  let value = '';
  if (bead && field === 'status') {
    const outcome = bead.metadata?.[K.OUTCOME];
    value = bead.status !== 'closed' ? bead.status : outcome === 'fail' ? 'failed' : 'complete';
  } else if (bead) {
    const key = field.slice('output.'.length);
    value = bead.metadata?.[key] ?? bead.metadata?.[`output.${key}`] ?? '';
  }
  const want = raw.replace(/^(["'])(.*)\1$/, '$2');
  return op === '==' ? value === want : value !== want;
}

/** The nodes of iteration `n` of a loop: the body's ids under its prefix, what each needs, its needs outside. */
export function iterationNodes(state: LoopState, n: number): { node: GraphNode; inner: string[] }[] {
  const prefix = state.prefix(n);
  return state.body.map((node) => ({
    node: {
      ...node,
      id: prefix + node.id,
      needs: [],
      ...(node.checks ? { checks: prefix + node.checks } : {}),
      ...(node.loop ? { loop: { ...node.loop, prefix: prefix + node.loop.prefix } } : {}),
    },
    inner: node.needs.map((d) => prefix + d),
  }));
}

/** The body's last nodes (none of the body needs them): the next iteration starts after these. */
export function bodySinks(body: GraphNode[]): string[] {
  const needed = new Set(body.flatMap((n) => n.needs));
  return body.filter((n) => !needed.has(n.id)).map((n) => n.id);
}

/**
 * The items a bond node pours a run for: its `for_each` read from the step bead's metadata (`output.<key>`: the
 * key, or `output.<key>`) or the run's vars (`vars.<name>`) — a JSON array, else one item a line.
 */
export function bondItems(forEach: string, step: Bead, runVars: Record<string, string>): unknown[] {
  const [source, ...rest] = forEach.split('.');
  const key = rest.join('.');
  const raw =
    source === 'vars' ? runVars[key] : (step.metadata?.[key] ?? step.metadata?.[`output.${key}`] ?? undefined);
  if (raw === undefined || raw.trim() === '') return [];
  try {
    const parsed: unknown = JSON.parse(raw);
    if (Array.isArray(parsed)) return parsed;
  } catch {
    // Not JSON: one item a line.
  }
  return raw
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
}

/** A bonded run's vars: `{item}`, `{item.<field>}` and `{index}` (from 0) filled in the bond's vars. */
export function itemVars(vars: Record<string, string>, item: unknown, index: number): Record<string, string> {
  const text = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));
  return Object.fromEntries(
    Object.entries(vars).map(([k, v]) => [
      k,
      v.replace(/\{(item(?:\.[A-Za-z0-9_]+)*|index)\}/g, (whole, path: string) => {
        if (path === 'index') return String(index);
        let at: unknown = item;
        for (const part of path.split('.').slice(1)) {
          at = typeof at === 'object' && at !== null ? (at as Record<string, unknown>)[part] : undefined;
        }
        return at === undefined ? whole : text(at);
      }),
    ]),
  );
}

/** A children node (`waits_for`) may close: every run its bond poured ended (`all`), one did (`any`), or none was. */
export function childrenEnded(
  node: Bead,
  bond: Bead | undefined,
  statusOf: (id: string) => string | undefined,
): boolean {
  if (!bond || bond.status !== 'closed') return false;
  const runs = JSON.parse(bond.metadata?.[K.BONDED] ?? '[]') as string[];
  const closed = runs.filter((id) => statusOf(id) === 'closed').length;
  return runs.length === 0 || (node.metadata?.[K.WAIT_MODE] === 'any' ? closed > 0 : closed === runs.length);
}
