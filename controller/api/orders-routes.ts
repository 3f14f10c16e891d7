import { Body, Controller, Get, Path, Post, Query, Response, Route, SuccessResponse, Tags } from '@tsoa/runtime';
import type { OKResponseBody } from '../../shared/dto/common.js';
import type { ErrorModel } from '../../shared/dto/errors.js';
import type { FeedBody } from '../../shared/dto/formulas.js';
import type {
  OrderCheckListBody,
  OrderHistoryDetailResponse,
  OrderHistoryListBody,
  OrderListBody,
  OrderResponse,
  OrderRunInputBody,
  OrderRunOutputBody,
} from '../../shared/dto/orders.js';
import { Problem } from '../../shared/http/problem.js';
import { decodeBeadCursor, encodeBeadCursor } from '../beads/page-token.js';
import type { CityRuntime } from '../city-runtime.js';
import type { OrderDef } from '../orders/order-file.js';
import { OrderOverrideEditor } from '../config/order-override-editor.js';
import { historyDetail, historyEntry, orderCheck, orderFeedItem, orderResponse } from '../orders/order-views.js';

const HISTORY_LIMIT = 20;
const FEED_LIMIT = 50;

/**
 * @param cityName City name.
 * @param name Order name (`orders/<name>.toml`).
 * @pattern cityName \S
 */
@Route('v0/city/{cityName}')
@Tags('Orders')
@Response<ErrorModel>(404, 'City not running, or no such order (`order-not-found`)')
export class OrdersRoutes extends Controller {
  constructor(private readonly city: CityRuntime) {
    super();
  }

  /**
   * The city's orders (`orders/<name>.toml`, with `city.toml`'s `[[orders.overrides]]` laid over them). A file
   * that does not parse is left out and named in `errors`; the others run.
   * @summary List orders
   */
  @Get('orders')
  public async listOrders(@Path('cityName') _cityName: string): Promise<OrderListBody> {
    const { orders, errors } = this.city.orders.list();
    return {
      orders: orders.map((o) => orderResponse(this.city.name, o, this.overridden(o))),
      ...(errors.length ? { errors } : {}),
    };
  }

  /**
   * Whether each order is due now and why (`never run`, `cooldown: 59m52s remaining`, `next at …`, `check
   * exited 0`, `disabled`, …), when it last fired and how that ended, and when it is next due.
   * @summary Check orders
   * @param _fresh Accepted for compatibility; the answer is always computed now.
   */
  @Get('orders/check')
  public async checkOrders(
    @Path('cityName') _cityName: string,
    @Query('fresh') _fresh?: boolean,
  ): Promise<OrderCheckListBody> {
    const { orders, errors } = this.city.orders.list();
    return {
      checks: orders.map((o) => orderCheck(o, this.city.orderScheduler)),
      ...(errors.length ? { errors } : {}),
    };
  }

  /**
   * Firings of orders, newest first, from their tracking beads: status, exit code, duration, and whether output
   * was kept (`GET /order/history/{bead_id}` has it).
   * @summary Order history
   * @param scoped_name Only this order's firings.
   * @param before Only firings before this time (RFC 3339).
   * @param limit At most this many (default 20).
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   */
  @Get('orders/history')
  @Response<ErrorModel>(422, 'Invalid before or limit')
  public async orderHistory(
    @Path() cityName: string,
    @Query() scoped_name?: string,
    @Query() before?: string,
    @Query() limit?: number,
  ): Promise<OrderHistoryListBody> {
    let beforeMs: number | undefined;
    if (before !== undefined) {
      beforeMs = Date.parse(before);
      if (Number.isNaN(beforeMs)) {
        throw new Problem('validation-failed', `invalid: before ${JSON.stringify(before)}`, {
          errors: [{ location: 'query.before', message: 'before is an RFC 3339 time', value: before }],
        });
      }
    }
    const runs = this.city.beads.orderRuns(scoped_name, { limit: limit || HISTORY_LIMIT, createdBefore: beforeMs });
    const entries = runs.items.map(historyEntry);
    return { entries };
  }

  /**
   * Recent order firings, newest first, as feed items.
   * @summary Order feed
   * @param limit At most this many (default 50).
   * @param cursor `next_cursor` of the previous page.
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   */
  @Get('orders/feed')
  @Response<ErrorModel>(400, 'Invalid cursor')
  public async orderFeed(
    @Path() cityName: string,
    @Query('scope_kind') _scopeKind?: string,
    @Query('scope_ref') _scopeRef?: string,
    @Query() limit?: number,
    @Query() cursor?: string,
  ): Promise<FeedBody> {
    const size = limit || FEED_LIMIT;
    const { items, more } = this.city.beads.orderRuns(undefined, {
      limit: size,
      ...(cursor ? { before: decodeBeadCursor(cursor) } : {}),
    });
    return {
      items: items.map(orderFeedItem),
      partial: false,
      ...(more ? { next_cursor: encodeBeadCursor(items.at(-1)!) } : {}),
    };
  }

  /**
   * One firing: its captured output (stdout and stderr as they came, the last 64 KiB), exit code and duration.
   * @summary Get an order firing's output
   * @param bead_id The firing's tracking bead.
   */
  @Get('order/history/{bead_id}')
  public async orderFiring(
    @Path() cityName: string,
    @Path() bead_id: string,
    @Query('store_ref') _storeRef?: string,
  ): Promise<OrderHistoryDetailResponse> {
    const bead = this.city.beads.orderRun(bead_id);
    if (!bead) {
      throw new Problem('bead-not-found', `not_found: no order firing with tracking bead ${bead_id}`);
    }
    return historyDetail(bead);
  }

  /**
   * One order.
   * @summary Get an order
   */
  @Get('order/{name}')
  public async getOrder(@Path() cityName: string, @Path() name: string): Promise<OrderResponse> {
    const order = this.order(name);
    return orderResponse(this.city.name, order, this.overridden(order));
  }

  /**
   * Enables the order: `enabled = true` in its `[[orders.overrides]]` entry of `city.toml` (created when
   * missing; the rest of the file as it was). It holds across restarts.
   * @summary Enable an order
   */
  @Post('order/{name}/enable')
  @Response<ErrorModel>(409, 'city.toml on disk is not valid (fix it by hand first), or cannot be edited safely')
  @Response<ErrorModel>(422, 'The city the edit would leave is not valid (named; city.toml is left as it was)')
  public async enableOrder(@Path() cityName: string, @Path() name: string): Promise<OKResponseBody> {
    this.setEnabled(name, true);
    return { status: 'ok' };
  }

  /**
   * Disables the order: `enabled = false` in its `[[orders.overrides]]` entry of `city.toml`. It no longer fires
   * on its trigger (`POST /order/{name}/run` still fires it).
   * @summary Disable an order
   */
  @Post('order/{name}/disable')
  @Response<ErrorModel>(409, 'city.toml on disk is not valid (fix it by hand first), or cannot be edited safely')
  @Response<ErrorModel>(422, 'The city the edit would leave is not valid (named; city.toml is left as it was)')
  public async disableOrder(@Path() cityName: string, @Path() name: string): Promise<OKResponseBody> {
    this.setEnabled(name, false);
    return { status: 'ok' };
  }

  /**
   * Fires the order now, whatever its trigger: a tracking bead is created and `order.fired` recorded before the
   * answer (202, with `tracking_id`); the command or formula runs on, and `order.completed` or `order.failed`
   * follows. A firing of it still open holds this one back (409) unless the order is `idempotent`.
   * @summary Fire an order now
   */
  @Post('order/{name}/run')
  @SuccessResponse(202, 'Accepted')
  @Response<ErrorModel>(409, 'An earlier firing is still open (`conflict-wrong-state`)')
  @Response<ErrorModel>(422, 'A required param is missing')
  public async runOrder(
    @Path() cityName: string,
    @Path() name: string,
    @Body() body?: OrderRunInputBody,
  ): Promise<OrderRunOutputBody> {
    const order = this.order(name);
    const tracking = await this.city.orderScheduler.fireNow(order, body?.vars);
    this.setStatus(202);
    this.setHeader('Location', `/v0/city/${encodeURIComponent(this.city.name)}/order/history/${tracking.id}`);
    return { status: 'dispatched', scoped_name: order.scopedName, tracking_id: tracking.id };
  }

  private order(name: string): OrderDef {
    const order = this.city.orders.get(name);
    if (order) return order;
    const { errors } = this.city.orders.list();
    const broken = errors.find((e) => e.startsWith(`orders/${name}.`));
    if (broken)
      throw new Problem('validation-failed', `invalid: ${broken}`, {
        errors: [{ location: 'path.name', message: broken, value: name }],
      });
    throw new Problem('order-not-found', `not_found: order not found: ${name}`);
  }

  private overridden(order: OrderDef): boolean {
    return this.city.config.orders.overrides.some(
      (o) => o.name === order.name && (o.rig === undefined || o.rig === '*' || o.rig === order.rig),
    );
  }

  private setEnabled(name: string, enabled: boolean): void {
    const order = this.order(name);
    new OrderOverrideEditor(this.city).setEnabled(order.name, enabled, order.rig);
  }
}
