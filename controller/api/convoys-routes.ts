import {
  Body,
  Controller,
  Delete,
  Get,
  Header,
  Path,
  Post,
  Query,
  Response,
  Route,
  SuccessResponse,
  Tags,
} from '@tsoa/runtime';
import type { Bead, ListBodyBead } from '../../shared/dto/beads.js';
import type { OKResponseBody } from '../../shared/dto/common.js';
import type {
  ConvoyCheckResponse,
  ConvoyCreateInputBody,
  ConvoyGetResponse,
  ConvoyItemsInputBody,
} from '../../shared/dto/convoys.js';
import type { ErrorModel } from '../../shared/dto/errors.js';
import { decodeBeadCursor } from '../beads/page-token.js';
import type { CityRuntime } from '../city-runtime.js';
import { pageBody } from './beads-routes.js';
import { blockUntilChanged } from './blocking.js';

/**
 * @param cityName City name.
 * @pattern cityName \S
 */
@Route('v0/city/{cityName}')
@Tags('Convoys')
@Response<ErrorModel>(404, 'City not running, or no such convoy (`convoy-not-found`)')
export class ConvoysRoutes extends Controller {
  constructor(private readonly city: CityRuntime) {
    super();
  }

  /**
   * Open convoys, newest first. A blocking query with `index`.
   * @summary List convoys
   * @param limit Page size, 1–1000 (default 100).
   * @param cursor `next_cursor` of the previous page.
   * @param index Blocking query: wait until the event head passes this seq.
   * @param wait How long a blocking query may wait (a duration, default `30s`, at most `2m`).
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   * @isInt index
   * @minimum index 0
   */
  @Get('convoys')
  @SuccessResponse<{ 'X-CTL-Index': string }>(200, 'OK')
  @Response<ErrorModel>(400, 'Invalid cursor')
  @Response<ErrorModel>(422, 'Invalid limit, index or wait')
  public async listConvoys(
    @Path() cityName: string,
    @Query() limit?: number,
    @Query() cursor?: string,
    @Query() index?: number,
    @Query() wait?: string,
  ): Promise<ListBodyBead> {
    const before = cursor ? decodeBeadCursor(cursor) : undefined;
    const head = await blockUntilChanged(this.city, index, wait);
    this.setHeader('X-CTL-Index', String(head));
    return pageBody(this.city.convoys.list({ limit: limit || 100, before }));
  }

  /**
   * Creates a convoy tracking the given beads (they must exist). Records `bead.created` and `convoy.created`.
   * @summary Create a convoy
   * @param idempotencyKey Makes a retried create safe.
   */
  @Post('convoys')
  @SuccessResponse(201, 'Created')
  @Response<ErrorModel>(422, 'Invalid body or unknown items')
  public async createConvoy(
    @Path() cityName: string,
    @Body() body: ConvoyCreateInputBody,
    @Header('idempotency-key') idempotencyKey?: string,
  ): Promise<Bead> {
    const { convoy } = await this.city.convoys.create(
      body,
      idempotencyKey ? { key: idempotencyKey, endpoint: '/convoys', body } : undefined,
    );
    this.setStatus(201);
    return convoy;
  }

  /**
   * A convoy, the beads it tracks, and its progress.
   * @summary Get a convoy
   */
  @Get('convoy/{id}')
  public getConvoy(@Path() cityName: string, @Path() id: string): ConvoyGetResponse {
    return this.city.convoys.get(id);
  }

  /**
   * Deletes a convoy by closing it, as `…/close` does (its bead and the beads it tracked stay; deleting a
   * closed convoy changes nothing). Records `convoy.closed`.
   * @summary Delete (close) a convoy
   */
  @Delete('convoy/{id}')
  public async deleteConvoy(@Path() cityName: string, @Path() id: string): Promise<OKResponseBody> {
    await this.city.convoys.delete(id);
    return { status: 'ok' };
  }

  /**
   * Tracks more beads.
   * @summary Add to a convoy
   */
  @Post('convoy/{id}/add')
  @Response<ErrorModel>(422, 'Unknown items')
  public async addToConvoy(
    @Path() cityName: string,
    @Path() id: string,
    @Body() body: ConvoyItemsInputBody,
  ): Promise<OKResponseBody> {
    await this.city.convoys.add(id, body.items ?? []);
    return { status: 'ok' };
  }

  /**
   * Stops tracking beads.
   * @summary Remove from a convoy
   */
  @Post('convoy/{id}/remove')
  @Response<ErrorModel>(422, 'Items the convoy does not track')
  public async removeFromConvoy(
    @Path() cityName: string,
    @Path() id: string,
    @Body() body: ConvoyItemsInputBody,
  ): Promise<OKResponseBody> {
    await this.city.convoys.remove(id, body.items ?? []);
    return { status: 'ok' };
  }

  /**
   * How many tracked beads are closed; `complete` once all are (and there is at least one).
   * @summary Check a convoy
   */
  @Get('convoy/{id}/check')
  public checkConvoy(@Path() cityName: string, @Path() id: string): ConvoyCheckResponse {
    return this.city.convoys.check(id);
  }

  /**
   * Closes a convoy (idempotent). Records `bead.closed` and `convoy.closed`.
   * @summary Close a convoy
   */
  @Post('convoy/{id}/close')
  public async closeConvoy(@Path() cityName: string, @Path() id: string): Promise<OKResponseBody> {
    await this.city.convoys.close(id);
    return { status: 'ok' };
  }
}
