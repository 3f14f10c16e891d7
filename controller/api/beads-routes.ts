import {
  Body,
  Controller,
  Delete,
  Get,
  Header,
  Patch,
  Path,
  Post,
  Query,
  Response,
  Route,
  SuccessResponse,
  Tags,
} from '@tsoa/runtime';
import type {
  Bead,
  BeadAssignInputBody,
  BeadCloseInputBody,
  BeadCreateInputBody,
  BeadDepInputBody,
  BeadDepsResponse,
  BeadGraphResponse,
  BeadUpdateBody,
  ListBodyBead,
} from '../../shared/dto/beads.js';
import type { OKResponseBody } from '../../shared/dto/common.js';
import type { ErrorModel } from '../../shared/dto/errors.js';
import { STATUSES, type BeadChange } from '../beads/bead-store.js';
import { Problem } from '../../shared/http/problem.js';
import { decodeBeadCursor, decodeReadyCursor, encodeBeadCursor, encodeReadyCursor } from '../beads/page-token.js';
import { openSessionOf } from '../agents/session-briefing.js';
import type { CityRuntime } from '../city-runtime.js';
import { blockUntilChanged } from './blocking.js';

/**
 * @param cityName City name.
 * @pattern cityName \S
 */
@Route('v0/city/{cityName}')
@Tags('Beads')
@Response<ErrorModel>(404, 'City not running, or no such bead (`bead-not-found`)')
export class BeadsRoutes extends Controller {
  constructor(private readonly city: CityRuntime) {
    super();
  }

  /**
   * Beads, newest first, in pages; open and in-progress ones unless `all` (or `status=closed`). Filters are
   * served from indexes. With `index`, a blocking query: it answers once the city's event head passes
   * `index` (or after `wait`). `X-CTL-Index` carries the event head.
   * @summary List beads
   * @param status `open`, `in_progress` or `closed`.
   * @param type Bead type.
   * @param exclude_type Beads not of this type (`session` leaves out the beads that record sessions).
   * @param label Beads with this label.
   * @param assignee Beads assigned to this agent.
   * @param rig Beads of this rig.
   * @param all Include closed beads.
   * @param limit Page size, 1–1000 (default 100; 0 means the default).
   * @param cursor `next_cursor` of the previous page.
   * @param index Blocking query: wait until the event head passes this seq.
   * @param wait How long a blocking query may wait (a duration, default `30s`, at most `2m`).
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   * @isInt index
   * @minimum index 0
   */
  @Get('beads')
  @SuccessResponse<{ 'X-CTL-Index': string }>(200, 'OK')
  @Response<ErrorModel>(400, 'Invalid cursor')
  @Response<ErrorModel>(422, 'Invalid limit, index or wait')
  public async listBeads(
    @Path() cityName: string,
    @Query() status?: string,
    @Query() type?: string,
    @Query() label?: string,
    @Query() assignee?: string,
    @Query() rig?: string,
    @Query() all?: boolean,
    @Query() limit?: number,
    @Query() cursor?: string,
    @Query() index?: number,
    @Query() wait?: string,
    @Query() exclude_type?: string,
  ): Promise<ListBodyBead> {
    const before = cursor ? decodeBeadCursor(cursor) : undefined;
    if (status !== undefined && !(STATUSES as readonly string[]).includes(status)) {
      const message = `status must be one of ${STATUSES.join(', ')}`;
      throw new Problem('validation-failed', `invalid: ${message}`, {
        errors: [{ location: 'query.status', message, value: status }],
      });
    }
    const head = await blockUntilChanged(this.city, index, wait);
    this.setHeader('X-CTL-Index', String(head));
    const page = this.city.beads.list({
      status,
      type,
      excludeType: exclude_type,
      label,
      assignee,
      includeClosed: all === true,
      limit: limit || 100,
      before,
      metadata: rig === undefined ? undefined : { rig },
    });
    return pageBody(page);
  }

  /**
   * Creates a bead: `open`, type `task` unless given, id `<prefix>-<n>`. Records `bead.created`. With an
   * `Idempotency-Key`, a repeat of the request answers with the bead the first one created (201 again); the
   * same key with a different body is a 422.
   * @summary Create a bead
   * @param idempotencyKey Makes a retried create safe.
   */
  @Post('beads')
  @SuccessResponse(201, 'Created')
  @Response<ErrorModel>(422, 'Invalid body, a missing parent, or an Idempotency-Key reused with another body')
  public async createBead(
    @Path() cityName: string,
    @Body() body: BeadCreateInputBody,
    @Header('idempotency-key') idempotencyKey?: string,
  ): Promise<Bead> {
    const metadata = { ...(body.metadata ?? {}), ...(body.rig ? { rig: body.rig } : {}) };
    // A bead of a rig with a prefix is numbered with it (`web-42`); the numbers stay the city's.
    const rigPrefix = body.rig ? this.city.config.rigs.find((r) => r.name === body.rig)?.prefix : undefined;
    const { bead } = await this.city.beads.create(
      {
        ...(rigPrefix ? { prefix: rigPrefix } : {}),
        title: body.title,
        type: body.type,
        description: body.description,
        priority: body.priority,
        assignee: body.assignee,
        labels: body.labels ?? undefined,
        metadata,
        parent: body.parent,
        deferUntil: body.defer_until,
      },
      idempotencyKey ? { key: idempotencyKey, endpoint: '/beads', body } : undefined,
    );
    this.setStatus(201);
    return bead;
  }

  /**
   * Work ready to start, oldest first, in pages: open, not deferred, not a container or record (`message`,
   * `convoy`, …), and every `blocks`/`waits-for`/`conditional-blocks` dependency closed.
   * @summary Ready beads
   * @param assignee Only beads assigned to this agent.
   * @param limit Page size, 1–1000 (default 100; 0 means the default).
   * @param cursor `next_cursor` of the previous page.
   * @param index Blocking query: wait until the event head passes this seq.
   * @param wait How long a blocking query may wait (a duration, default `30s`, at most `2m`).
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   * @isInt index
   * @minimum index 0
   */
  @Get('beads/ready')
  @SuccessResponse<{ 'X-CTL-Index': string }>(200, 'OK')
  @Response<ErrorModel>(400, 'Invalid cursor')
  @Response<ErrorModel>(422, 'Invalid limit, index or wait')
  public async readyBeads(
    @Path() cityName: string,
    @Query() assignee?: string,
    @Query() limit?: number,
    @Query() cursor?: string,
    @Query() index?: number,
    @Query() wait?: string,
  ): Promise<ListBodyBead> {
    const after = cursor ? decodeReadyCursor(cursor) : undefined;
    const head = await blockUntilChanged(this.city, index, wait);
    this.setHeader('X-CTL-Index', String(head));
    const page = this.city.beads.ready({ assignee, limit: limit || 100, after });
    const body: ListBodyBead = { items: page.items, total: page.total };
    const last = page.items.at(-1);
    if (page.more && last) body.next_cursor = encodeReadyCursor(last);
    return body;
  }

  /**
   * A bead and everything hanging from it: beads whose metadata `ctl.root_bead_id` names it, a convoy root's
   * tracked beads, and the parent-child closure of all of them, with the dependency edges among them.
   * @summary Bead graph
   */
  @Get('beads/graph/{rootID}')
  public graph(@Path() cityName: string, @Path() rootID: string): BeadGraphResponse {
    return this.city.beads.graph(rootID);
  }

  /**
   * @summary Get a bead
   */
  @Get('bead/{id}')
  public getBead(@Path() cityName: string, @Path() id: string): Bead {
    return this.city.beads.get(id);
  }

  /**
   * Changes a bead: absent fields stay; labels are appended (`remove_labels` removes); metadata is merged (an
   * empty value removes a key); `parent: null` clears the parent. Records `bead.updated` (`bead.closed` when
   * it closes the bead).
   * @summary Update a bead
   */
  @Patch('bead/{id}')
  @Response<ErrorModel>(422, 'Invalid change')
  public async updateBead(
    @Path() cityName: string,
    @Path() id: string,
    @Body() body: BeadUpdateBody,
  ): Promise<OKResponseBody> {
    await this.city.beads.update(id, changeOf(body));
    return { status: 'ok' };
  }

  /**
   * The same as `PATCH /v0/city/{cityName}/bead/{id}`, for clients that cannot send PATCH.
   * @summary Update a bead (POST)
   */
  @Post('bead/{id}/update')
  @Response<ErrorModel>(422, 'Invalid change')
  public updateBeadPost(
    @Path() cityName: string,
    @Path() id: string,
    @Body() body: BeadUpdateBody,
  ): Promise<OKResponseBody> {
    return this.updateBead(cityName, id, body);
  }

  /**
   * Deletes a bead, and the dependency edges and parent links that pointed at it. Records `bead.deleted`.
   * @summary Delete a bead
   */
  @Delete('bead/{id}')
  public async deleteBead(@Path() cityName: string, @Path() id: string): Promise<OKResponseBody> {
    await this.city.beads.delete(id);
    return { status: 'ok' };
  }

  /**
   * Closes a bead (idempotent: closing a closed bead changes nothing). Records `bead.closed`. A `reason` is kept
   * in its metadata (`close_reason`). With `session` (an agent's `ctl bead close` sends its own), the session
   * must be open — else a 404 `session-not-found` and nothing changes — and is recorded as `closed_by`, its agent
   * as the event's actor.
   * @summary Close a bead
   */
  @Post('bead/{id}/close')
  @Response<ErrorModel>(404, 'No such bead, or the session named is gone (`session-not-found`)')
  public async closeBead(
    @Path() cityName: string,
    @Path() id: string,
    @Body() body?: BeadCloseInputBody,
  ): Promise<OKResponseBody> {
    const session = body?.session !== undefined ? openSessionOf(this.city.sessions, body.session) : undefined;
    this.city.beads.get(id);
    const record = session?.record;
    await this.city.beads.close(id, {
      ...(body?.reason !== undefined ? { reason: body.reason } : {}),
      ...(record
        ? { by: record.session_name, actor: record.kind === 'agent' ? record.template : record.session_name }
        : {}),
    });
    return { status: 'ok' };
  }

  /**
   * Returns a closed bead to `open`. A bead that is not closed is a 409 `conflict-wrong-state`.
   * @summary Reopen a bead
   */
  @Post('bead/{id}/reopen')
  @Response<ErrorModel>(409, 'The bead is not closed')
  public async reopenBead(@Path() cityName: string, @Path() id: string): Promise<OKResponseBody> {
    await this.city.beads.reopen(id);
    return { status: 'ok' };
  }

  /**
   * Sets (or, with an empty assignee, clears) who works on a bead.
   * @summary Assign a bead
   */
  @Post('bead/{id}/assign')
  public async assignBead(
    @Path() cityName: string,
    @Path() id: string,
    @Body() body: BeadAssignInputBody,
  ): Promise<{ [key: string]: string }> {
    const bead = await this.city.beads.update(id, { assignee: body.assignee ?? '' });
    return { id: bead.id, assignee: bead.assignee ?? '' };
  }

  /**
   * A bead's dependency edges, the beads it depends on, the beads depending on it, and its children.
   * @summary Bead dependencies
   */
  @Get('bead/{id}/deps')
  public beadDeps(@Path() cityName: string, @Path() id: string): BeadDepsResponse {
    const bead = this.city.beads.get(id);
    const beads = this.city.beads;
    return {
      dependencies: bead.dependencies ?? [],
      depends_on: (bead.dependencies ?? []).map((d) => beads.find(d.depends_on_id)).filter((b): b is Bead => !!b),
      dependents: beads.dependents(id),
      children: beads.children(id),
    };
  }

  /**
   * Adds a dependency: this bead depends on `depends_on`, of the given kind (default `blocks`). The target must
   * exist, and an ordering dependency that would close a cycle is refused (422). Records `bead.updated`.
   * @summary Add a dependency
   */
  @Post('bead/{id}/deps')
  @Response<ErrorModel>(422, 'Missing target bead, or a cycle')
  public async addDependency(
    @Path() cityName: string,
    @Path() id: string,
    @Body() body: BeadDepInputBody,
  ): Promise<Bead> {
    return this.city.beads.addDependency(id, body.depends_on, body.type ?? 'blocks');
  }

  /**
   * Removes this bead's dependency on `dependsOn` (of `type`, or of every kind). Records `bead.updated`.
   * @summary Remove a dependency
   * @param type Only the dependency of this kind.
   */
  @Delete('bead/{id}/deps/{dependsOn}')
  public async removeDependency(
    @Path() cityName: string,
    @Path() id: string,
    @Path() dependsOn: string,
    @Query() type?: 'blocks' | 'waits-for' | 'conditional-blocks' | 'tracks' | 'parent-child' | 'relates-to',
  ): Promise<Bead> {
    return this.city.beads.removeDependency(id, dependsOn, type);
  }
}

function changeOf(body: BeadUpdateBody): BeadChange {
  return {
    title: body.title,
    status: body.status,
    type: body.type,
    priority: body.priority,
    assignee: body.assignee,
    description: body.description,
    addLabels: body.labels ?? undefined,
    removeLabels: body.remove_labels ?? undefined,
    metadata: body.metadata,
    parent: body.parent,
    deferUntil: body.defer_until,
  };
}

export function pageBody(page: { items: Bead[]; total: number; more: boolean }): ListBodyBead {
  const body: ListBodyBead = { items: page.items, total: page.total };
  const last = page.items.at(-1);
  if (page.more && last) body.next_cursor = encodeBeadCursor(last);
  return body;
}
