import { Controller, Delete, Get, Path, Post, Query, Response, Route, SuccessResponse, Tags } from '@tsoa/runtime';
import type { ErrorModel } from '../../shared/dto/errors.js';
import type {
  Run,
  RunCancelOutputBody,
  RunsCensusOutputBody,
  RunsListOutputBody,
  RunStepsOutputBody,
  WaitListBody,
  WaitStateFilter,
  WaitView,
  WorkflowDeleteResponse,
  WorkflowSnapshotResponse,
} from '../../shared/dto/formulas.js';
import { Problem } from '../../shared/http/problem.js';
import type { CityRuntime } from '../city-runtime.js';
import { GATE_KIND } from '../molecules/molecule-keys.js';
import { sessionWaitView } from '../waits/session-waits.js';
import { parseWait } from './blocking.js';

const RUNS_LIMIT = 50;
const WAITS_CAP = 500;

/**
 * A run is a molecule: the beads one instantiation of a formula made (a root and its steps), named by its root
 * bead's id. The same molecule is a workflow (`/workflow/{workflow_id}`, the same id).
 * @param cityName City name.
 * @param run_id The run's root bead id.
 * @pattern cityName \S
 */
@Route('v0/city/{cityName}')
@Tags('Runs')
@Response<ErrorModel>(404, 'City not running, or no such run (`run-not-found`) or workflow (`workflow-not-found`)')
export class RunsRoutes extends Controller {
  constructor(private readonly city: CityRuntime) {
    super();
  }

  /**
   * Runs (molecules), newest first, with how many runs there are in each status. A run's status comes from its
   * beads: `completed`, `failed`, `canceled` or `skipped` once its root is closed (by its outcome); while open,
   * `active` once any step was taken or closed, `waiting` when a gate holds it and no step is ready or in
   * progress, else `pending`.
   * @summary List runs
   * @param limit At most this many runs (default 50; `status_counts` counts them all).
   * @param formula Only runs of this formula.
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 10000
   */
  @Get('runs')
  public async listRuns(
    @Path() cityName: string,
    @Query() limit?: number,
    @Query() formula?: string,
  ): Promise<RunsListOutputBody> {
    const { runs, counts } = this.city.runs.list(limit || RUNS_LIMIT, formula);
    return { runs, status_counts: counts, partial: false };
  }

  /**
   * How many runs there are in each status.
   * @summary Count runs by status
   */
  @Get('runs/census')
  public async runsCensus(@Path('cityName') _cityName: string): Promise<RunsCensusOutputBody> {
    return { status_counts: this.city.runs.list(0).counts, partial: false };
  }

  /**
   * A run: its formula, target, status, and for a run that did not pass, why (`last_error`).
   * @summary Get a run
   */
  @Get('runs/{run_id}')
  public async getRun(@Path() cityName: string, @Path() run_id: string): Promise<Run> {
    return this.city.runs.run(this.city.runs.root(run_id));
  }

  /**
   * Every bead of the run but its root, oldest first: work steps (`kind: step`) with their attempt, and the
   * steps the controller closes (`group`, `check`, `gate`, `finalize`). A step is `blocked` while a bead it needs
   * is open, `pending` when it is ready, `active` when taken, then `completed`, `failed`, `skipped` or `canceled`.
   * @summary List a run's steps
   */
  @Get('runs/{run_id}/steps')
  public async runSteps(@Path() cityName: string, @Path() run_id: string): Promise<RunStepsOutputBody> {
    return { run_id, steps: this.city.runs.steps(this.city.runs.root(run_id)) };
  }

  /**
   * Cancels a run: every open bead of it is closed (outcome `canceled`), then its root, and `molecule.resolved`
   * records it. A finished run is left as it is (`closed` 0).
   * @summary Cancel a run
   */
  @Post('runs/{run_id}/cancel')
  @SuccessResponse(202, 'Accepted')
  public async cancelRun(@Path() cityName: string, @Path() run_id: string): Promise<RunCancelOutputBody> {
    const root = this.city.runs.root(run_id);
    const closed = await this.city.molecules.cancel(root.id);
    this.setStatus(202);
    return { run_id, status: this.city.runs.status(this.city.beads.get(root.id)), closed };
  }

  /**
   * The molecule as a graph: every bead (the root first) with its kind, step, attempt and status, and the
   * dependency edges among them (`from` waits for `to`); and the same run as its formula was written
   * (`logical_nodes`, `logical_edges`, `scope_groups`). `snapshot_version` is the seq of the last event that
   * changed the run; with `index`, a blocking query: it answers once the version passes `index` (or after
   * `wait`). `X-CTL-Index` carries the version.
   * @summary Get a workflow snapshot
   * @param workflow_id The root bead id (the run id).
   * @param index Blocking query: wait until the run's `snapshot_version` passes this.
   * @param wait How long a blocking query may wait (a duration, default `30s`, at most `2m`).
   * @isInt index
   * @minimum index 0
   */
  @Get('workflow/{workflow_id}')
  @SuccessResponse<{ 'X-CTL-Index': string }>(200, 'OK')
  @Response<ErrorModel>(422, 'Invalid index or wait')
  public async getWorkflow(
    @Path() cityName: string,
    @Path() workflow_id: string,
    @Query('scope_kind') _scopeKind?: string,
    @Query('scope_ref') _scopeRef?: string,
    @Query() index?: number,
    @Query() wait?: string,
  ): Promise<WorkflowSnapshotResponse> {
    const waitMs = parseWait(wait);
    const root = this.city.runs.root(workflow_id, 'workflow-not-found');
    if (index !== undefined) await this.city.runs.versions.changedSince(root.id, index, waitMs);
    const snapshot = this.city.runs.snapshot(
      this.city.runs.root(workflow_id, 'workflow-not-found'),
      this.city.log.head(),
    );
    this.setHeader('X-CTL-Index', String(snapshot.snapshot_version));
    return snapshot;
  }

  /**
   * Ends a workflow: every open bead of it is closed (outcome `skipped`) and its root with it; with
   * `delete=true`, every bead of it is deleted instead.
   * @summary Close or delete a workflow
   * @param workflow_id The root bead id (the run id).
   * @param hardDelete Delete the beads rather than close them.
   */
  @Delete('workflow/{workflow_id}')
  public async deleteWorkflow(
    @Path() cityName: string,
    @Path() workflow_id: string,
    @Query('scope_kind') _scopeKind?: string,
    @Query('scope_ref') _scopeRef?: string,
    @Query('delete') hardDelete?: boolean,
  ): Promise<WorkflowDeleteResponse> {
    const root = this.city.runs.root(workflow_id, 'workflow-not-found');
    if (hardDelete) {
      const deleted = await this.city.molecules.remove(root.id);
      return { workflow_id, closed: 0, deleted, partial: false };
    }
    const closed = await this.city.molecules.cancel(root.id, 'skipped', 'workflow closed');
    return { workflow_id, closed, deleted: 0, partial: false };
  }

  /**
   * Waits, newest first: sessions' dependency waits (`deps`: a session waits for beads to close and is nudged when
   * they have, `POST /session/{id}/wait`), and the gates of runs, which hold the steps after them until a time
   * passes (`timer`), a command exits 0 (`condition`) or a person closes the gate bead (`human`,
   * `POST /bead/{id}/close`). `state` is `pending` (its beads or needs are still open), `ready` (met: nudging, or
   * waiting for its time, condition or person), `closed`, and for a session's wait `canceled` or `failed`.
   * @summary List waits
   * @param state `pending`, `ready`, `closed`, `canceled`, `failed` or `all` (default: open ones).
   * @param session Only the waits of this session (a session id): its own, and gates holding its agent's work.
   */
  @Get('waits')
  public async listWaits(
    @Path() cityName: string,
    @Query() state?: WaitStateFilter,
    @Query() session?: string,
  ): Promise<WaitListBody> {
    const gates = this.city.runs.waits({ state, limit: WAITS_CAP }, (agent) => this.sessionOf(agent));
    const own = this.city.waits.list({ state, session, limit: WAITS_CAP + 1 }).map(sessionWaitView);
    const waits = [...own, ...gates.waits.filter((w) => !session || w.session_id === session)].sort((a, b) =>
      (b.created_at ?? '').localeCompare(a.created_at ?? ''),
    );
    return {
      waits: waits.slice(0, WAITS_CAP),
      capped: gates.capped || own.length > WAITS_CAP || waits.length > WAITS_CAP,
      partial: false,
    };
  }

  /**
   * One wait: a session's dependency wait, or a run's gate.
   * @summary Get a wait
   * @param id The wait's (the gate bead's) id.
   */
  @Get('wait/{id}')
  public async getWait(@Path() cityName: string, @Path() id: string): Promise<WaitView> {
    const own = this.city.waits.get(id);
    if (own) return sessionWaitView(own);
    const gate = this.city.beads.find(id);
    if (!gate || gate.issue_type !== 'gate' || !gate.metadata?.[GATE_KIND]) {
      throw new Problem('wait-not-found', `not_found: wait not found: ${id}`);
    }
    return this.city.runs.wait(gate, (agent) => this.sessionOf(agent));
  }

  private sessionOf(agent: string): { id: string; name: string } | undefined {
    const session = this.city.sessions.agentSessions(agent)[0];
    return session ? { id: session.id, name: session.record.session_name } : undefined;
  }
}
