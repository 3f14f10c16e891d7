import { Body, Controller, Delete, Get, Path, Put, Query, Response, Route, Tags } from '@tsoa/runtime';
import { pageOf } from './list-page.js';
import type { ConfigExplainResponse, ConfigResponse, ConfigValidateOutputBody } from '../../shared/dto/config.js';
import type { ErrorModel } from '../../shared/dto/errors.js';
import type {
  AgentPatch,
  AgentPatchSetInputBody,
  ListBodyAgentPatch,
  ListBodyProviderPatch,
  ListBodyRigPatch,
  PatchDeletedResponseBody,
  PatchOKResponseBody,
  ProviderPatch,
  ProviderPatchSetInputBody,
  RigPatch,
  RigPatchSetInputBody,
} from '../../shared/dto/patches.js';
import type { CityRuntime } from '../city-runtime.js';
import { configView, defaultsView, explainView, validateView } from '../config/config-views.js';
import {
  PatchEditor,
  agentPatchFields,
  agentPatchView,
  providerPatchFields,
  providerPatchView,
  rigPatchFields,
  rigPatchView,
} from '../config/patch-editor.js';

/**
 * @param cityName City name.
 * @pattern cityName \S
 */
@Route('v0/city/{cityName}')
@Tags('Config')
export class ConfigRoutes extends Controller {
  constructor(private readonly city: CityRuntime) {
    super();
  }

  /**
   * The city's configuration as composed and in use: `city.toml`, its `pack.toml`, `agents/` directories, the
   * packs it imports, `[agent_defaults]` and patches, in that order (agents by qualified name, each with its
   * origin; every import with its commit or why it is left out).
   * @summary City config
   */
  @Get('config')
  public getCityConfig(@Path() cityName: string): ConfigResponse {
    return configView(this.city, cityName);
  }

  /**
   * What a city of this name has before its files say anything: the name and the bead prefix derived from it,
   * every built-in provider preset, and no agents, rigs, services, packs or patches — for diffing against
   * `GET /config`.
   * @summary Config defaults
   */
  @Get('config/defaults')
  public getConfigDefaults(@Path() cityName: string): ConfigResponse {
    return defaultsView(cityName);
  }

  /**
   * Where each part of the configuration comes from: every agent with its origin (`inline`: the city's own
   * `city.toml`, `pack.toml` or `agents/`; `pack-derived`: an imported pack's) and file, every provider with its
   * origin (`builtin`, `city`, `builtin+city`, `pack-derived`), whether a patch changed it, and the imports.
   * @summary Explain the config
   */
  @Get('config/explain')
  public explainConfig(@Path('cityName') _cityName: string): ConfigExplainResponse {
    return explainView(this.city);
  }

  /**
   * Checks the configuration as it is on disk now: `errors` when a file does not load (the last good
   * configuration stays in use meanwhile), an agent cannot run, a pack cannot be read, a patch matches nothing,
   * or an order or formula does not parse — each naming its file and key; `warnings` for what runs but is
   * likely a mistake.
   * @summary Validate the city's configuration
   */
  @Get('config/validate')
  public validateCityConfig(@Path('cityName') _cityName: string): ConfigValidateOutputBody {
    return validateView(this.city);
  }

  /**
   * The `[[patches.agent]]` tables of city.toml: changes laid over agents the city or its packs declare.
   * @summary List agent patches
   * @param limit Page size, 1–1000 (default 100; 0 means the default).
   * @param cursor `next_cursor` of the previous page.
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   */
  @Get('patches/agents')
  @Response<ErrorModel>(400, 'Invalid cursor')
  public listAgentPatches(
    @Path('cityName') _cityName: string,
    @Query() limit?: number,
    @Query() cursor?: string,
  ): ListBodyAgentPatch {
    const page = pageOf(
      new PatchEditor(this.city).list('agent'),
      (p) => `${p.dir ?? ''}/${p.name}`,
      'pa',
      limit,
      cursor,
    );
    return { ...page, items: page.items.map(agentPatchView) };
  }

  /**
   * Sets the patch of one agent (replacing what this body can say of the one it had; keys only city.toml can say,
   * such as `pre_start_append`, are kept), written to city.toml with the rest of the file as it was; the agent changes at once (a running session restarts when idle if its start changed). A patch that
   * matches no agent, or a value the agent cannot take, is a 422 and nothing is written.
   * @summary Set an agent patch
   */
  @Put('patches/agents')
  @Response<ErrorModel>(422, 'No such agent, or a bad value')
  public setAgentPatch(@Path('cityName') _cityName: string, @Body() body: AgentPatchSetInputBody): PatchOKResponseBody {
    new PatchEditor(this.city).set('agent', body.name, body.dir, agentPatchFields(body));
    return { status: 'ok', agent_patch: body.dir ? `${body.dir}/${body.name}` : body.name };
  }

  /**
   * @summary Get an agent patch
   * @param base Agent name.
   */
  @Get('patches/agent/{base}')
  @Response<ErrorModel>(404, 'No patch for it (`patch-not-found`)')
  public getAgentPatch(@Path('cityName') _cityName: string, @Path() base: string): AgentPatch {
    return agentPatchView(new PatchEditor(this.city).get('agent', base));
  }

  /**
   * @summary Get a rig agent's patch
   * @param dir Rig name.
   * @param base Agent name.
   */
  @Get('patches/agent/{dir}/{base}')
  @Response<ErrorModel>(404, 'No patch for it (`patch-not-found`)')
  public getQualifiedAgentPatch(
    @Path('cityName') _cityName: string,
    @Path() dir: string,
    @Path() base: string,
  ): AgentPatch {
    return agentPatchView(new PatchEditor(this.city).get('agent', base, dir));
  }

  /**
   * @summary Delete an agent patch
   * @param base Agent name.
   */
  @Delete('patches/agent/{base}')
  @Response<ErrorModel>(404, 'No patch for it (`patch-not-found`)')
  public deleteAgentPatch(@Path('cityName') _cityName: string, @Path() base: string): PatchDeletedResponseBody {
    new PatchEditor(this.city).remove('agent', base);
    return { status: 'deleted', agent_patch: base };
  }

  /**
   * @summary Delete a rig agent's patch
   * @param dir Rig name.
   * @param base Agent name.
   */
  @Delete('patches/agent/{dir}/{base}')
  @Response<ErrorModel>(404, 'No patch for it (`patch-not-found`)')
  public deleteQualifiedAgentPatch(
    @Path('cityName') _cityName: string,
    @Path() dir: string,
    @Path() base: string,
  ): PatchDeletedResponseBody {
    new PatchEditor(this.city).remove('agent', base, dir);
    return { status: 'deleted', agent_patch: `${dir}/${base}` };
  }

  /**
   * The `[[patches.provider]]` tables of city.toml.
   * @summary List provider patches
   * @param limit Page size, 1–1000 (default 100; 0 means the default).
   * @param cursor `next_cursor` of the previous page.
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   */
  @Get('patches/providers')
  @Response<ErrorModel>(400, 'Invalid cursor')
  public listProviderPatches(
    @Path('cityName') _cityName: string,
    @Query() limit?: number,
    @Query() cursor?: string,
  ): ListBodyProviderPatch {
    const page = pageOf(
      new PatchEditor(this.city).list('provider'),
      (p) => `${p.dir ?? ''}/${p.name}`,
      'pp',
      limit,
      cursor,
    );
    return { ...page, items: page.items.map(providerPatchView) };
  }

  /**
   * Sets the patch of one provider (a built-in preset, the city's, or a pack's); 422 when there is no such
   * provider or the result does not resolve.
   * @summary Set a provider patch
   */
  @Put('patches/providers')
  @Response<ErrorModel>(422, 'No such provider, or a bad value')
  public setProviderPatch(
    @Path('cityName') _cityName: string,
    @Body() body: ProviderPatchSetInputBody,
  ): PatchOKResponseBody {
    new PatchEditor(this.city).set('provider', body.name, undefined, providerPatchFields(body));
    return { status: 'ok', provider_patch: body.name };
  }

  /**
   * @summary Get a provider patch
   * @param name Provider name.
   */
  @Get('patches/provider/{name}')
  @Response<ErrorModel>(404, 'No patch for it (`patch-not-found`)')
  public getProviderPatch(@Path('cityName') _cityName: string, @Path() name: string): ProviderPatch {
    return providerPatchView(new PatchEditor(this.city).get('provider', name));
  }

  /**
   * @summary Delete a provider patch
   * @param name Provider name.
   */
  @Delete('patches/provider/{name}')
  @Response<ErrorModel>(404, 'No patch for it (`patch-not-found`)')
  public deleteProviderPatch(@Path('cityName') _cityName: string, @Path() name: string): PatchDeletedResponseBody {
    new PatchEditor(this.city).remove('provider', name);
    return { status: 'deleted', provider_patch: name };
  }

  /**
   * The `[[patches.rig]]` tables of city.toml.
   * @summary List rig patches
   * @param limit Page size, 1–1000 (default 100; 0 means the default).
   * @param cursor `next_cursor` of the previous page.
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   */
  @Get('patches/rigs')
  @Response<ErrorModel>(400, 'Invalid cursor')
  public listRigPatches(
    @Path('cityName') _cityName: string,
    @Query() limit?: number,
    @Query() cursor?: string,
  ): ListBodyRigPatch {
    const page = pageOf(new PatchEditor(this.city).list('rig'), (p) => `${p.dir ?? ''}/${p.name}`, 'pr', limit, cursor);
    return { ...page, items: page.items.map(rigPatchView) };
  }

  /**
   * Sets the patch of one rig; 422 when there is no such rig.
   * @summary Set a rig patch
   */
  @Put('patches/rigs')
  @Response<ErrorModel>(422, 'No such rig, or a bad value')
  public setRigPatch(@Path('cityName') _cityName: string, @Body() body: RigPatchSetInputBody): PatchOKResponseBody {
    new PatchEditor(this.city).set('rig', body.name, undefined, rigPatchFields(body));
    return { status: 'ok', rig_patch: body.name };
  }

  /**
   * @summary Get a rig patch
   * @param name Rig name.
   */
  @Get('patches/rig/{name}')
  @Response<ErrorModel>(404, 'No patch for it (`patch-not-found`)')
  public getRigPatch(@Path('cityName') _cityName: string, @Path() name: string): RigPatch {
    return rigPatchView(new PatchEditor(this.city).get('rig', name));
  }

  /**
   * @summary Delete a rig patch
   * @param name Rig name.
   */
  @Delete('patches/rig/{name}')
  @Response<ErrorModel>(404, 'No patch for it (`patch-not-found`)')
  public deleteRigPatch(@Path('cityName') _cityName: string, @Path() name: string): PatchDeletedResponseBody {
    new PatchEditor(this.city).remove('rig', name);
    return { status: 'deleted', rig_patch: name };
  }
}
