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
import type { OKResponseBody } from '../../shared/dto/common.js';
import type { ErrorModel } from '../../shared/dto/errors.js';
import type {
  ListBodyProviderResponse,
  ProviderCreatedOutputBody,
  ProviderCreateInputBody,
  ProviderPublicListBody,
  ProviderResponse,
  ProviderUpdateInputBody,
} from '../../shared/dto/providers.js';
import { Problem } from '../../shared/http/problem.js';
import { decodeToken, encodeToken, invalidToken } from '../../shared/http/page-token.js';
import type { CityRuntime } from '../city-runtime.js';
import type { ResolvedProvider } from '../providers/provider-spec.js';
import { providerPublicResponse, providerResponse } from '../providers/provider-views.js';

/**
 * @param cityName City name.
 * @param name Provider name.
 * @pattern cityName \S
 */
@Route('v0/city/{cityName}')
@Tags('Providers')
@Response<ErrorModel>(404, 'City not running, or no such provider (`provider-not-found`)')
export class ProvidersRoutes extends Controller {
  constructor(private readonly city: CityRuntime) {
    super();
  }

  /**
   * Every provider the city can start sessions with, by name: the built-in presets (`claude`, `codex`,
   * `gemini`, `generic`), its `[providers.<name>]` tables, and `default` for its `[workspace] start_command`,
   * each with its `base` chain resolved.
   * @summary List providers
   * @param limit Page size, 1–1000 (default 100; 0 means the default).
   * @param cursor `next_cursor` of the previous page.
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   */
  @Get('providers')
  @Response<ErrorModel>(400, 'Invalid cursor')
  @Response<ErrorModel>(422, 'Invalid limit')
  public listProviders(
    @Path() cityName: string,
    @Query() limit?: number,
    @Query() cursor?: string,
  ): ListBodyProviderResponse {
    const { items, total, next_cursor } = this.page(limit, cursor);
    return { items: items.map(providerResponse), total, ...(next_cursor ? { next_cursor } : {}) };
  }

  /**
   * The providers as a browser may see them: names, protocol, permission modes (as a choice) and option
   * defaults — no command line, arguments, flags or environment.
   * @summary List providers (public view)
   * @param limit Page size, 1–1000 (default 100; 0 means the default).
   * @param cursor `next_cursor` of the previous page.
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   */
  @Get('providers/public')
  @Response<ErrorModel>(400, 'Invalid cursor')
  @Response<ErrorModel>(422, 'Invalid limit')
  public listPublicProviders(
    @Path() cityName: string,
    @Query() limit?: number,
    @Query() cursor?: string,
  ): ProviderPublicListBody {
    const { items, total, next_cursor } = this.page(limit, cursor);
    return { items: items.map(providerPublicResponse), total, ...(next_cursor ? { next_cursor } : {}) };
  }

  /**
   * Writes a `[providers.<name>]` table into `city.toml` (comments and layout of the rest of the file kept) and
   * reloads it: the next session start can use it. `{name, command}` alone is a custom provider: its program on
   * the `pipe` runtime, speaking the `text` protocol. With `base` it inherits a preset (`builtin:claude`) or
   * another provider and changes what it sets. Checked as the controller checks the file at startup. With an
   * `Idempotency-Key`, a repeat answers as the first did.
   * @summary Create a provider
   * @param idempotencyKey Makes a retried create safe.
   */
  @Post('providers')
  @SuccessResponse(201, 'Created')
  @Response<ErrorModel>(409, 'The name is taken, or city.toml on disk is not valid (fix it by hand first)')
  @Response<ErrorModel>(
    422,
    'Invalid body: the setting at fault in `errors` (an unknown base, a cycle of bases, no command, a bad regex, …); or an Idempotency-Key reused with another body',
  )
  public async createProvider(
    @Path() cityName: string,
    @Body() body: ProviderCreateInputBody,
    @Header('idempotency-key') idempotencyKey?: string,
  ): Promise<ProviderCreatedOutputBody> {
    const reply = await this.city.providerEditor.create(body, idempotencyKey);
    this.setStatus(201);
    return reply;
  }

  /**
   * One provider, its `base` chain resolved.
   * @summary Get a provider
   */
  @Get('provider/{name}')
  public getProvider(@Path() cityName: string, @Path() name: string): ProviderResponse {
    const provider = this.city.providers.get(name);
    if (!provider) throw notFound(name);
    return providerResponse(provider);
  }

  /**
   * Changes settings in the provider's `[providers.<name>]` table (a built-in preset gets a table that adjusts
   * it): tables (`env`, `permission_modes`, `option_defaults`) merge key by key, `null` removes a setting.
   * Sessions started from now on use the new settings; running ones keep their program.
   * @summary Update a provider
   */
  @Patch('provider/{name}')
  @Response<ErrorModel>(
    409,
    'Another provider would no longer be valid, `default` (the start command), or city.toml on disk is not valid',
  )
  @Response<ErrorModel>(
    422,
    'Invalid body: the setting at fault in `errors`; or the city the edit would leave is not valid (named)',
  )
  public async updateProvider(
    @Path() cityName: string,
    @Path() name: string,
    @Body() body: ProviderUpdateInputBody,
  ): Promise<ProviderResponse> {
    return providerResponse(await this.city.providerEditor.update(name, body));
  }

  /**
   * Removes the provider's table from `city.toml`. A preset the city adjusted goes back to the preset; a
   * running session keeps its program.
   * @summary Delete a provider
   */
  @Delete('provider/{name}')
  @Response<ErrorModel>(
    409,
    'A built-in preset, `default` (the start command), a provider an agent, the workspace or another provider still uses, or city.toml on disk is not valid',
  )
  @Response<ErrorModel>(422, 'The city the edit would leave is not valid (named; city.toml is left as it was)')
  public async deleteProvider(@Path() cityName: string, @Path() name: string): Promise<OKResponseBody> {
    await this.city.providerEditor.remove(name);
    return { status: 'ok' };
  }

  /** A page of the providers by name: `limit` after the `cursor`'s name. */
  private page(
    limit: number | undefined,
    cursor: string | undefined,
  ): { items: ResolvedProvider[]; total: number; next_cursor?: string } {
    const all = this.city.providers.all();
    let from = 0;
    if (cursor !== undefined) {
      const after = decodeToken(cursor, 'pv').n;
      if (typeof after !== 'string') throw invalidToken();
      from = all.findIndex((p) => p.name > after);
      if (from < 0) from = all.length;
    }
    const size = limit || 100;
    const items = all.slice(from, from + size);
    const more = from + size < all.length;
    return {
      items,
      total: all.length,
      ...(more ? { next_cursor: encodeToken('pv', { n: items[items.length - 1]!.name }) } : {}),
    };
  }
}

function notFound(name: string): Problem {
  return new Problem('provider-not-found', `not_found: provider not found: ${name}`);
}
