import { Controller, Get, Path, Query, Route, Tags } from '@tsoa/runtime';
import type { UsageBody } from '../../shared/dto/usage.js';
import type { CityRuntime } from '../city-runtime.js';

/**
 * @param cityName City name.
 * @pattern cityName \S
 */
@Route('v0/city/{cityName}')
@Tags('Usage')
export class UsageRoutes extends Controller {
  constructor(private readonly city: CityRuntime) {
    super();
  }

  /**
   * Tokens and cost of the city's sessions' turns, as each provider reported them at the end of a turn (Claude
   * Code's stream-json `result` with its `usage` and `total_cost_usd`, Codex's `turn.completed` usage, ACP
   * `usage_update`), kept in `.ctl/usage.jsonl`: today, the last 24 hours, the recent hour by session, and
   * everything by session, agent and provider. A turn whose provider reported no cost is counted in `unpriced`.
   * @summary Usage of tokens and cost
   * @param aggregate_only Only the totals, without the per-session, per-agent and per-provider lists.
   */
  @Get('usage')
  public async usage(@Path('cityName') _cityName: string, @Query() aggregate_only?: boolean): Promise<UsageBody> {
    return this.city.usage.summary({ aggregateOnly: aggregate_only === true });
  }
}
