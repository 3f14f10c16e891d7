import {
  Body,
  Controller,
  Delete,
  Get,
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
import type { RigOverlapsResponse } from '../../shared/dto/overlaps.js';
import type { ErrorModel } from '../../shared/dto/errors.js';
import type {
  ListBodyRigResponse,
  RigCreateInputBody,
  RigCreateResponseBody,
  RigResponse,
  RigUpdateInputBody,
} from '../../shared/dto/rigs.js';
import { Problem } from '../../shared/http/problem.js';
import { startClone } from '../rigs/rig-clone.js';
import { decodeToken, encodeToken, invalidToken } from '../../shared/http/page-token.js';
import type { CityRuntime } from '../city-runtime.js';
import { blockUntilChanged } from './blocking.js';
import { RigEditor, rigOrProblem, rigResponse } from '../rigs/rigs.js';
import { pageOfPairs } from '../worktrees/overlaps.js';

/** What `POST /rig/{name}/{action}` does; each has its own route above the one refusing the rest. */
const RIG_ACTIONS = ['suspend', 'resume', 'restart'];

/**
 * @param cityName City name.
 * @param name Rig name.
 * @pattern cityName \S
 */
@Route('v0/city/{cityName}')
@Tags('Rigs')
@Response<ErrorModel>(404, 'City not running, or no such rig (`rig-not-found`)')
export class RigsRoutes extends Controller {
  constructor(private readonly city: CityRuntime) {
    super();
  }

  /**
   * The city's rigs (`[[rigs]]` in city.toml): the project directories its agents work in, each with how many of
   * its agents run; with `git=true`, each working tree read with the machine's git (branch, head, clean, ahead and
   * behind its upstream, changed files).
   * @summary List rigs
   * @param git Read each rig's git status (slower).
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
  @Get('rigs')
  @SuccessResponse<{ 'X-CTL-Index': string }>(200, 'OK')
  @Response<ErrorModel>(400, 'Invalid cursor')
  @Response<ErrorModel>(422, 'Invalid index or wait')
  public async listRigs(
    @Path() cityName: string,
    @Query() git?: boolean,
    @Query() limit?: number,
    @Query() cursor?: string,
    @Query() index?: number,
    @Query() wait?: string,
  ): Promise<ListBodyRigResponse> {
    this.setHeader('X-CTL-Index', String(await blockUntilChanged(this.city, index, wait)));
    const rigs = [...this.city.config.rigs].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    let after = '';
    if (cursor !== undefined) {
      const { name } = decodeToken(cursor, 'rg');
      if (typeof name !== 'string') throw invalidToken();
      after = name;
    }
    const size = limit || 100;
    const rest = rigs.filter((r) => r.name > after);
    const page = rest.slice(0, size);
    // git runs for every rig of the page at once: twenty rigs take about as long as one.
    const items = await Promise.all(page.map((rig) => rigResponse(this.city, rig, git === true)));
    return {
      items,
      total: rigs.length,
      ...(rest.length > size ? { next_cursor: encodeToken('rg', { name: page.at(-1)!.name }) } : {}),
    };
  }

  /**
   * Adds a rig: for an existing directory (`path`), a `[[rigs]]` table appended to city.toml (the rest of the file
   * as it was), 201; for a repository to clone (`git_url`), 202 at once — the clone runs in the background
   * (`rig.provision.progress` as it goes), then the rig is written and `request.result.rig.create` recorded, or
   * `request.failed`. Agents whose `dir` names the rig become its agents (`rig/agent`) and run in its directory.
   * @summary Add a rig
   */
  @Post('rigs')
  @SuccessResponse(201, 'Created')
  @Response<RigCreateResponseBody>(202, 'Accepted: cloning')
  @Response<ErrorModel>(409, 'A rig of that name exists (or is being cloned)')
  @Response<ErrorModel>(
    422,
    'A bad name; a path that is not an existing directory or breaks a placement rule (named); a git_url that is ' +
      'not one, could be taken for an option, or the source policy refuses (a private address)',
  )
  public async createRig(@Path() cityName: string, @Body() body: RigCreateInputBody): Promise<RigCreateResponseBody> {
    if (body.git_url !== undefined) {
      const accepted = await startClone(this.city, { ...body, git_url: body.git_url });
      this.setStatus(202);
      return accepted;
    }
    if (body.path === undefined) {
      throw new Problem('validation-failed', 'invalid: path or git_url is required', {
        errors: [{ location: 'body.path', message: 'an existing directory (path) or a repository to clone (git_url)' }],
      });
    }
    const rig = await new RigEditor(this.city).add({ ...body, path: body.path });
    this.setStatus(201);
    return {
      status: 'created',
      rig: rig.name,
      ...(rig.prefix ? { prefix: rig.prefix } : {}),
      ...(rig.default_branch ? { default_branch: rig.default_branch } : {}),
    };
  }

  /**
   * One rig; with `git=true`, its working tree.
   * @summary Get a rig
   * @param git Read its git status.
   */
  @Get('rig/{name}')
  public async getRig(@Path() cityName: string, @Path() name: string, @Query() git?: boolean): Promise<RigResponse> {
    return rigResponse(this.city, rigOrProblem(this.city, name), git === true);
  }

  /**
   * Pairs of the rig's open sessions whose worktrees changed the same files against their bases — committed on
   * their branches since the merge-base, and (for a worktree on this machine) uncommitted — read now, with the files
   * each pair shares. A session on a remote host counts with its branch as last fetched back (each turn's end).
   * The same is read at every turn end of a session of the rig; a pair that begins is a `rig.overlap` event.
   * Pages are in the order of the pairs' session names; each page is read anew.
   * @summary List a rig's overlapping worktrees
   * @param limit Page size, 1–1000 (default 100; 0 means the default).
   * @param cursor `next_cursor` of the previous page.
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   */
  @Get('rigs/{name}/overlaps')
  @Response<ErrorModel>(400, 'Invalid cursor')
  public async rigOverlaps(
    @Path() cityName: string,
    @Path() name: string,
    @Query() limit?: number,
    @Query() cursor?: string,
  ): Promise<RigOverlapsResponse> {
    let after = '';
    if (cursor !== undefined) {
      const { pair } = decodeToken(cursor, 'ov');
      if (typeof pair !== 'string') throw invalidToken();
      after = pair;
    }
    const rig = rigOrProblem(this.city, name);
    const read = await this.city.overlaps.compute(rig.name);
    // Undefined: the rig was removed from city.toml while its sessions were read.
    if (!read) throw new Problem('rig-not-found', `not_found: rig not found: ${name}`);
    const { items, last } = pageOfPairs(read.items, limit || 100, after);
    return {
      ...read,
      items,
      total: read.items.length,
      ...(last !== undefined ? { next_cursor: encodeToken('ov', { pair: last }) } : {}),
    };
  }

  /**
   * Changes a rig's path, prefix, default branch or suspension in its `[[rigs]]` table.
   * @summary Update a rig
   */
  @Patch('rig/{name}')
  @Response<ErrorModel>(422, 'A path that is not an existing directory, or breaks a placement rule (named)')
  public async updateRig(
    @Path() cityName: string,
    @Path() name: string,
    @Body() body: RigUpdateInputBody,
  ): Promise<RigResponse> {
    return rigResponse(this.city, await new RigEditor(this.city).update(name, body), false);
  }

  /**
   * Removes the rig's `[[rigs]]` table (its directory is left as it is). Agents whose `dir` named it are then
   * agents of the city, working in that directory.
   * @summary Remove a rig
   */
  @Delete('rig/{name}')
  @Response<ErrorModel>(409, 'city.toml on disk is not valid (fix it by hand first), or cannot be edited safely')
  @Response<ErrorModel>(
    422,
    'The city the edit would leave is not valid, such as two agents of one name (named; city.toml is left as it was)',
  )
  public async deleteRig(@Path() cityName: string, @Path() name: string): Promise<OKResponseBody> {
    new RigEditor(this.city).remove(name);
    return { status: 'ok' };
  }

  /**
   * Suspends the rig (`suspended = true` in its table): its agents' sessions finish their turn, then stop, and
   * none starts until it is resumed.
   * @summary Suspend a rig
   */
  @Post('rig/{name}/suspend')
  @Response<ErrorModel>(409, 'city.toml on disk is not valid (fix it by hand first), or cannot be edited safely')
  @Response<ErrorModel>(422, 'The city the edit would leave is not valid (named; city.toml is left as it was)')
  public async suspendRig(@Path() cityName: string, @Path() name: string): Promise<RigResponse> {
    return rigResponse(this.city, await new RigEditor(this.city).update(name, { suspended: true }), false);
  }

  /**
   * Resumes the rig: its agents start again as their configuration and work ask.
   * @summary Resume a rig
   */
  @Post('rig/{name}/resume')
  @Response<ErrorModel>(409, 'city.toml on disk is not valid (fix it by hand first), or cannot be edited safely')
  @Response<ErrorModel>(422, 'The city the edit would leave is not valid (named; city.toml is left as it was)')
  public async resumeRig(@Path() cityName: string, @Path() name: string): Promise<RigResponse> {
    return rigResponse(this.city, await new RigEditor(this.city).update(name, { suspended: false }), false);
  }

  /**
   * Restarts the running sessions of the rig's agents (each stops, then starts again on its configuration), for
   * after a change in the rig's directory the programs should see. Answers once each has been asked.
   * @summary Restart a rig's sessions
   */
  @Post('rig/{name}/restart')
  public async restartRig(@Path() cityName: string, @Path() name: string): Promise<RigResponse> {
    const rig = rigOrProblem(this.city, name);
    const sessions = this.city.agents
      .filter((a) => a.rig === rig.name)
      .flatMap((a) => this.city.sessions.agentSessions(a.name))
      .filter((s) => s.running && !s.changing);
    for (const session of sessions) void session.restart(`rig ${rig.name} restarted`, {});
    return rigResponse(this.city, rig, false);
  }

  /**
   * Any other action is refused: a rig answers to `suspend`, `resume` and `restart` only.
   * @summary Refuse an unknown rig action
   */
  @Post('rig/{name}/{action}')
  @Response<ErrorModel>(422, 'Not an action of a rig (`validation-failed`, naming the actions there are)')
  public unknownRigAction(@Path() cityName: string, @Path() name: string, @Path() action: string): RigResponse {
    const message = `must be one of ${RIG_ACTIONS.join(', ')}`;
    throw new Problem('validation-failed', `invalid: action ${message}, got ${JSON.stringify(action)}`, {
      errors: [{ location: 'path.action', message, value: action }],
    });
  }
}
