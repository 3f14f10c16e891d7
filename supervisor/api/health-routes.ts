import { Controller, Get, Query, Response, Route, Tags } from '@tsoa/runtime';
import type { ErrorModel } from '../../shared/dto/errors.js';
import type { SupervisorHealthOutputBody } from '../../shared/dto/health.js';
import type { ProviderReadinessResponse, ReadinessResponse } from '../../shared/dto/readiness.js';
import { DEFAULT_READINESS_ITEMS } from '../../shared/readiness.js';
import type { SupervisorServices } from './ioc.js';

@Route('')
@Tags('Supervisor')
export class HealthRoutes extends Controller {
  constructor(private readonly services: SupervisorServices) {
    super();
  }

  /**
   * Supervisor liveness: uptime, city counts, and the age of the reconciler's last pass (a wedged reconciler
   * shows as `status: degraded`).
   * @summary Supervisor health
   */
  @Get('health')
  public getHealth(): SupervisorHealthOutputBody {
    return this.services.health();
  }

  /**
   * Probes the agent command-line tools on the supervisor's PATH (`configured`, `needs_auth`, `not_installed`,
   * `invalid_configuration`, `probe_error`). Results are cached for 2 s unless `fresh=true`.
   * @summary Readiness of providers and tools
   * @param items Comma-separated items (default `claude,codex,gemini,github_cli`).
   * @param fresh Probe again, bypassing the cache.
   */
  @Get('v0/readiness')
  @Response<ErrorModel>(400, 'Unknown item')
  public async getReadiness(@Query() items?: string, @Query() fresh?: boolean): Promise<ReadinessResponse> {
    return this.services.prober.readiness(items, DEFAULT_READINESS_ITEMS, fresh === true);
  }

  /**
   * Probes provider command-line tools only.
   * @summary Readiness of providers
   * @param providers Comma-separated providers (default `claude,codex,gemini`).
   * @param fresh Probe again, bypassing the cache.
   */
  @Get('v0/provider-readiness')
  @Response<ErrorModel>(400, 'Unknown provider')
  public async getProviderReadiness(
    @Query() providers?: string,
    @Query() fresh?: boolean,
  ): Promise<ProviderReadinessResponse> {
    return this.services.prober.providerReadiness(providers, fresh === true);
  }
}
