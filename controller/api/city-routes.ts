import { Body, Controller, Get, Patch, Path, Query, Response, Route, SuccessResponse, Tags } from '@tsoa/runtime';
import type { CityPatchInputBody } from '../../shared/dto/agents.js';
import type { CityGetResponse } from '../../shared/dto/cities.js';
import type { ErrorModel } from '../../shared/dto/errors.js';
import type { HealthOutputBody, StatusBody } from '../../shared/dto/health.js';
import type { ProviderReadinessResponse, ReadinessResponse } from '../../shared/dto/readiness.js';
import { DEFAULT_READINESS_ITEMS, SUPPORTED_PROVIDERS } from '../../shared/readiness.js';
import { VERSION } from '../../shared/version.js';
import type { CityRuntime } from '../city-runtime.js';
import { cityProviderReadiness } from '../providers/provider-readiness.js';
import { AgentEditor } from '../config/agent-editor.js';
import { isSuspended } from '../agents/agent-views.js';
import { blockUntilChanged } from './blocking.js';

/**
 * @param cityName City name.
 * @pattern cityName \S
 */
@Route('v0/city/{cityName}')
@Tags('City')
@Response<ErrorModel>(404, 'City not found or not running (`not_found: city not found or not running: <name>`)')
export class CityRoutes extends Controller {
  constructor(private readonly city: CityRuntime) {
    super();
  }

  /**
   * The city's identity and configuration summary, from its controller.
   * @summary City detail
   */
  @Get('')
  public getCity(@Path() cityName: string): CityGetResponse {
    const { config } = this.city;
    const body: CityGetResponse = {
      name: cityName,
      path: this.city.root,
      suspended: config.workspace.suspended,
      uptime_sec: this.city.uptimeSec(),
      agent_count: this.city.agents.length,
      rig_count: config.rigs.length,
      version: VERSION,
    };
    if (config.workspace.provider) body.provider = config.workspace.provider;
    if (config.workspace.startCommand) body.start_command = config.workspace.startCommand;
    return body;
  }

  /**
   * Suspends the whole city (`suspended: true`: every agent's sessions finish their turn, then stop; nothing
   * starts) or resumes it, by setting `[workspace] suspended` in `city.toml`. Records `city.suspended` or
   * `city.resumed` when it changes; asking for the state it is in changes nothing.
   * @summary Suspend or resume the city
   */
  @Patch('')
  @Response<ErrorModel>(409, 'city.toml on disk is not valid (fix it by hand first)')
  @Response<ErrorModel>(422, 'Invalid body')
  public async patchCity(@Path() cityName: string, @Body() body: CityPatchInputBody): Promise<CityGetResponse> {
    if (body.suspended !== undefined && body.suspended !== this.city.config.workspace.suspended) {
      new AgentEditor(this.city).setCitySuspended(body.suspended);
      await this.city.log.append({
        type: body.suspended ? 'city.suspended' : 'city.resumed',
        actor: 'api',
        subject: cityName,
        payload: {},
      });
    }
    return this.getCity(cityName);
  }

  /**
   * Controller liveness.
   * @summary City health
   */
  @Get('health')
  public getCityHealth(@Path() cityName: string): HealthOutputBody {
    return {
      status: 'ok',
      uptime_sec: this.city.uptimeSec(),
      version: VERSION,
      city: cityName,
      path: this.city.root,
      pid: process.pid,
    };
  }

  /**
   * Counts of the city's agents, rigs, work and mail, and its event head (also in `X-CTL-Index`). With `index`,
   * a blocking query: it answers once the event head passes `index` (or `wait` runs out).
   * @summary City status
   * @param index Blocking query: wait until the event head passes this seq.
   * @param wait How long a blocking query may wait (a duration, default `30s`, at most `2m`).
   * @param lite Leave out the work and mail counts (which read the bead and mail stores), for frequent polls.
   * @isInt index
   * @minimum index 0
   */
  @Get('status')
  @SuccessResponse<{ 'X-CTL-Index': string }>(200, 'OK')
  @Response<ErrorModel>(422, 'Invalid index or wait')
  public async getCityStatus(
    @Path() cityName: string,
    @Query() index?: number,
    @Query() wait?: string,
    @Query() lite?: boolean,
  ): Promise<StatusBody> {
    const { config } = this.city;
    const head = await blockUntilChanged(this.city, index, wait);
    this.setHeader('X-CTL-Index', String(head));
    const agents = this.city.agents;
    const sessions = (name: string) => this.city.sessions.agentSessions(name);
    const runningAgents = agents.filter((a) => sessions(a.name).some((s) => s.running)).length;
    const counts = lite ? undefined : this.city.statusCounts.get();
    return {
      name: cityName,
      path: this.city.root,
      uptime_sec: this.city.uptimeSec(),
      suspended: config.workspace.suspended,
      agent_count: agents.length,
      rig_count: config.rigs.length,
      running: runningAgents,
      agents: {
        total: agents.length,
        running: runningAgents,
        suspended: agents.filter((a) => isSuspended(this.city, a)).length,
        quarantined: agents.filter((a) => sessions(a.name).some((s) => s.state === 'quarantined')).length,
      },
      rigs: { total: config.rigs.length, suspended: config.rigs.filter((r) => r.suspended).length },
      ...(counts ? { work: counts.work, mail: counts.mail } : {}),
      version: VERSION,
      event_head: head,
      tick: this.city.tick.stats(),
      orders: this.city.orderScheduler.runStats.stats(),
      ...(this.city.reloadError ? { config_reload_error: this.city.reloadError } : {}),
    };
  }

  /**
   * Probes the provider and tools this city can use, on the controller's PATH. Defaults to the city's own
   * provider (if it names one) and `github_cli`.
   * @summary City readiness
   * @param items Comma-separated items.
   * @param fresh Probe again, bypassing the 2 s cache.
   */
  @Get('readiness')
  @Response<ErrorModel>(400, 'Unknown item')
  public async getCityReadiness(
    @Path() cityName: string,
    @Query() items?: string,
    @Query() fresh?: boolean,
  ): Promise<ReadinessResponse> {
    const own = this.city.config.workspace.provider;
    const fallback = own && SUPPORTED_PROVIDERS.includes(own) ? [own, 'github_cli'] : DEFAULT_READINESS_ITEMS;
    return this.city.prober.readiness(items, fallback, fresh === true);
  }

  /**
   * Probes the city's providers on the controller's PATH, as `city.toml` on disk defines them: a provider built on
   * a preset (`claude`, `codex`, `gemini`) gets that preset's probe (installed, signed in) on its own program; any
   * other is `configured` when its program (the command's first word) is an executable path or on PATH, else
   * `not_installed`; one the file does not define validly is `invalid_configuration`, with why.
   * @summary City provider readiness
   * @param providers Comma-separated providers (default: every provider of the city).
   * @param fresh Probe again, bypassing the 2 s cache.
   */
  @Get('provider-readiness')
  @Response<ErrorModel>(400, 'Unknown provider')
  public async getCityProviderReadiness(
    @Path() cityName: string,
    @Query() providers?: string,
    @Query() fresh?: boolean,
  ): Promise<ProviderReadinessResponse> {
    return cityProviderReadiness(
      {
        configPath: this.city.paths.config,
        cityRoot: this.city.root,
        config: this.city.config,
        registry: this.city.providers,
        prober: this.city.prober,
      },
      providers,
      fresh === true,
    );
  }
}
