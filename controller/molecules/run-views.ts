import { SESSION_WAIT_LABEL } from '../waits/session-waits.js';
import type { Bead } from '../../shared/dto/beads.js';
import type {
  MonitorFeedItemResponse,
  Run,
  RunStatus,
  RunStatusCounts,
  RunStep,
  RunStepStatus,
  WaitView,
  WorkflowSnapshotResponse,
} from '../../shared/dto/formulas.js';
import { Problem } from '../../shared/http/problem.js';
import type { BeadReads } from '../beads/beads-service.js';
import { ROUTED_TO } from '../beads/work-schema.js';
import { logicalGraph } from './logical-graph.js';
import * as K from './molecule-keys.js';
import type { RunVersions } from './run-versions.js';

const ROOTS_MAX = 1_000_000;

/** Every run status, at zero. */
export function emptyCounts(): RunStatusCounts {
  return { pending: 0, active: 0, waiting: 0, canceling: 0, completed: 0, failed: 0, canceled: 0, skipped: 0 };
}

/**
 * What the API shows of runs (molecules), derived from their beads alone — so it is the same after a restart:
 * a closed root's outcome is the run's end (`pass` → completed, `fail` → failed, `canceled`, `skipped`); an open
 * run is `active` once any of its beads was taken or closed, `waiting` when nothing is in progress and a gate
 * holds it, else `pending`.
 */
export class RunViews {
  constructor(
    private readonly beads: BeadReads,
    readonly versions: RunVersions,
  ) {}

  /** Roots of runs, newest first. */
  roots(options: { formula?: string; limit?: number; before?: string } = {}): Bead[] {
    return this.beads.list({
      type: 'molecule',
      includeClosed: true,
      metadata: { [K.KIND]: 'workflow', ...(options.formula ? { [K.FORMULA]: options.formula } : {}) },
      limit: options.limit ?? ROOTS_MAX,
      ...(options.before ? { before: options.before } : {}),
    }).items;
  }

  root(runId: string, notFound: 'run-not-found' | 'workflow-not-found' = 'run-not-found'): Bead {
    const root = this.beads.find(runId);
    if (!root || root.metadata?.[K.KIND] !== 'workflow') {
      const what = notFound === 'run-not-found' ? 'run' : 'workflow';
      throw new Problem(notFound, `not_found: ${what} not found: ${runId}`);
    }
    return root;
  }

  /** A bead's status by id: the run's own, else (a sequential pour's run before this one) the store's. */
  private statusOf(beads: Bead[]): (id: string) => string | undefined {
    const byId = new Map(beads.map((b) => [b.id, b]));
    return (id) => (byId.get(id) ?? this.beads.find(id))?.status;
  }

  members(rootId: string): Bead[] {
    return this.beads
      .list({ includeClosed: true, metadata: { [K.ROOT_BEAD_ID]: rootId }, limit: ROOTS_MAX })
      .items.reverse();
  }

  status(root: Bead, members?: Bead[]): RunStatus {
    if (root.status === 'closed') return closedStatus(root.metadata?.[K.OUTCOME]);
    const beads = members ?? this.members(root.id);
    const work = beads.filter((b) => b.metadata?.[K.KIND] !== 'finalize');
    if (work.some((b) => b.status === 'in_progress')) return 'active';
    const gates = work.filter((b) => b.metadata?.[K.KIND] === 'gate' && b.status !== 'closed');
    const statusOf = this.statusOf(beads);
    const reached = gates.some((g) => !(g.dependencies ?? []).some((d) => statusOf(d.depends_on_id) !== 'closed'));
    const readySteps = work.some(
      (b) =>
        b.metadata?.[K.KIND] === 'step' &&
        b.status === 'open' &&
        !(b.dependencies ?? []).some((d) => statusOf(d.depends_on_id) !== 'closed'),
    );
    if (reached && !readySteps) return 'waiting';
    return work.some((b) => b.status === 'closed') ? 'active' : 'pending';
  }

  run(root: Bead, members?: Bead[]): Run {
    const status = this.status(root, members);
    const outcome = root.metadata?.[K.OUTCOME];
    return {
      run_id: root.id,
      title: root.title,
      status,
      scope: { kind: 'city', ref: '' },
      ...(root.metadata?.[K.FORMULA] ? { formula: root.metadata[K.FORMULA] } : {}),
      ...(root.metadata?.[K.TARGET] ? { target: root.metadata[K.TARGET] } : {}),
      started_at: root.created_at,
      updated_at: root.updated_at ?? root.created_at,
      ...(root.status === 'closed' && outcome && outcome !== 'pass'
        ? {
            last_error: {
              code: outcome,
              ...(root.metadata?.[K.OUTCOME_REASON] ? { message: root.metadata[K.OUTCOME_REASON] } : {}),
            },
          }
        : {}),
    };
  }

  /** Runs newest first (at most `limit`), and how many runs there are in each status. */
  list(limit: number, formula?: string): { runs: Run[]; counts: RunStatusCounts } {
    const counts = emptyCounts();
    const runs: Run[] = [];
    for (const root of this.roots({ formula })) {
      const run = this.run(root);
      counts[run.status]++;
      if (runs.length < limit) runs.push(run);
    }
    return { runs, counts };
  }

  steps(root: Bead): RunStep[] {
    const members = this.members(root.id);
    const statusOf = this.statusOf(members);
    return members.map((bead) => ({
      id: bead.id,
      title: bead.title,
      status: stepStatus(bead, statusOf),
      kind: bead.metadata?.[K.KIND] ?? 'step',
      ...(bead.assignee || bead.metadata?.[ROUTED_TO] ? { assignee: bead.assignee || bead.metadata?.[ROUTED_TO] } : {}),
      ...(bead.metadata?.[K.STEP_REF] ? { step_ref: bead.metadata[K.STEP_REF] } : {}),
      ...(bead.metadata?.[K.ATTEMPT] ? { attempt: Number(bead.metadata[K.ATTEMPT]) } : {}),
    }));
  }

  snapshot(root: Bead, eventSeq: number): WorkflowSnapshotResponse {
    const members = this.members(root.id);
    const all = [root, ...members];
    const ids = new Set(all.map((b) => b.id));
    const byId = new Map(all.map((b) => [b.id, b]));
    const statusOf = this.statusOf(all);
    const graph = logicalGraph(members, (bead) => stepStatus(bead, statusOf));
    return {
      workflow_id: root.id,
      root_bead_id: root.id,
      root_store_ref: 'city',
      resolved_root_store: 'city',
      scope_kind: 'city',
      scope_ref: '',
      beads: all.map((bead) => ({
        id: bead.id,
        title: bead.title,
        status: bead === root ? this.status(root, members) : stepStatus(bead, statusOf),
        kind: bead === root ? 'workflow' : (bead.metadata?.[K.KIND] ?? 'step'),
        metadata: bead.metadata ?? {},
        ...(bead.metadata?.[K.STEP_REF]
          ? { step_ref: bead.metadata[K.STEP_REF], logical_bead_id: logicalId(bead, byId) }
          : {}),
        ...(bead.metadata?.[K.ATTEMPT] ? { attempt: Number(bead.metadata[K.ATTEMPT]) } : {}),
        ...(bead.assignee ? { assignee: bead.assignee } : {}),
        scope_ref: '',
      })),
      deps: all.flatMap((b) =>
        (b.dependencies ?? [])
          .filter((d) => ids.has(d.depends_on_id))
          .map((d) => ({ from: d.issue_id, to: d.depends_on_id, kind: d.type })),
      ),
      logical_nodes: graph.nodes,
      logical_edges: graph.edges,
      scope_groups: graph.groups,
      partial: false,
      stores_scanned: ['city'],
      snapshot_version: this.versions.version(root.id),
      snapshot_event_seq: eventSeq,
    };
  }

  feedItem(root: Bead): MonitorFeedItemResponse {
    const run = this.run(root);
    return {
      id: root.id,
      type: 'run',
      status: run.status,
      title: root.title,
      scope_kind: 'city',
      scope_ref: '',
      target: root.metadata?.[K.TARGET] ?? '',
      started_at: root.created_at,
      updated_at: root.updated_at ?? root.created_at,
      root_bead_id: root.id,
      workflow_id: root.id,
      ...(root.metadata?.[K.ATTACHED_BEAD_ID] ? { attached_bead_id: root.metadata[K.ATTACHED_BEAD_ID] } : {}),
      detail_available: true,
      run_detail_available: true,
    };
  }

  /** The city's waits (gates of runs), newest first; open ones unless `state` says otherwise. */
  waits(
    options: { state?: string; limit: number },
    sessionOf: (agent: string) => { id: string; name: string } | undefined,
  ): { waits: WaitView[]; capped: boolean } {
    const gates = this.beads.list({
      type: 'gate',
      includeClosed: options.state === 'closed' || options.state === 'all',
      limit: options.limit + 1,
    }).items;
    // A session's dependency waits are gates too, but not a run's: controller/waits/session-waits.ts shows them.
    const views = gates
      .filter((g) => !(g.labels ?? []).includes(SESSION_WAIT_LABEL))
      .map((g) => this.wait(g, sessionOf))
      .filter((w) => !options.state || options.state === 'all' || w.state === options.state);
    return { waits: views.slice(0, options.limit), capped: gates.length > options.limit };
  }

  wait(gate: Bead, sessionOf: (agent: string) => { id: string; name: string } | undefined): WaitView {
    const meta = gate.metadata ?? {};
    const kind = meta[K.GATE_KIND] ?? 'human';
    const reached = !(gate.dependencies ?? []).some(
      (d) => d.type === 'blocks' && this.beads.find(d.depends_on_id)?.status !== 'closed',
    );
    const held = this.beads.dependents(gate.id).filter((b) => b.metadata?.[K.ROOT_BEAD_ID] === meta[K.ROOT_BEAD_ID]);
    const agent = held.map((b) => b.metadata?.[ROUTED_TO]).find(Boolean);
    const session = agent ? sessionOf(agent) : undefined;
    const armed = Date.parse(meta[K.GATE_ARMED_AT] ?? '');
    const expires =
      kind === 'timer' && !Number.isNaN(armed)
        ? new Date(armed + Number(meta[K.GATE_DURATION_MS] ?? 0)).toISOString()
        : undefined;
    const note =
      kind === 'timer'
        ? `opens ${Number(meta[K.GATE_DURATION_MS] ?? 0) / 1000}s after it is reached`
        : kind === 'condition'
          ? `opens when \`${meta[K.GATE_CHECK]}\` exits 0`
          : 'opens when a person closes it';
    return {
      id: gate.id,
      session_id: session?.id ?? '',
      ...(session ? { session_name: session.name } : {}),
      kind,
      state: gate.status === 'closed' ? 'closed' : reached ? 'ready' : 'pending',
      status: gate.status === 'closed' ? 'closed' : 'open',
      dep_ids: held.map((b) => b.id),
      dep_mode: 'all',
      ...(expires ? { expires_at: expires } : {}),
      created_at: gate.created_at,
      labels: gate.labels ?? [],
      note: gate.title === (meta[K.STEP_REF] ?? '') ? note : `${gate.title}: ${note}`,
      ...(meta[K.ROOT_BEAD_ID] ? { run_id: meta[K.ROOT_BEAD_ID] } : {}),
    };
  }
}

/** The logical node a bead is part of: its own step, or for a check the step it checks. */
function logicalId(bead: Bead, byId: Map<string, Bead>): string | undefined {
  if (bead.metadata?.[K.KIND] === 'check') return byId.get(bead.metadata[K.CHECKS] ?? '')?.metadata?.[K.STEP_REF];
  return bead.metadata?.[K.STEP_REF];
}

function closedStatus(outcome: string | undefined): RunStatus {
  if (outcome === 'fail') return 'failed';
  if (outcome === 'canceled') return 'canceled';
  if (outcome === 'skipped') return 'skipped';
  return 'completed';
}

function stepStatus(bead: Bead, statusOf: (id: string) => string | undefined): RunStepStatus {
  if (bead.status === 'closed') {
    const outcome = bead.metadata?.[K.OUTCOME];
    if (outcome === 'fail') return 'failed';
    if (outcome === 'skipped') return 'skipped';
    if (outcome === 'canceled') return 'canceled';
    return 'completed';
  }
  if (bead.status === 'in_progress') return 'active';
  const blocked = (bead.dependencies ?? []).some((d) => d.type === 'blocks' && statusOf(d.depends_on_id) !== 'closed');
  return blocked ? 'blocked' : 'pending';
}
