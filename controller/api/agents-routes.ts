import {
  Body,
  Controller,
  Delete,
  Get,
  Patch,
  Path,
  Post,
  Put,
  Query,
  Response,
  Route,
  SuccessResponse,
  Tags,
} from '@tsoa/runtime';
import type {
  AgentCreatedOutputBody,
  AgentCreateInputBody,
  AgentOutputResponse,
  AgentResponse,
  AgentSuspensionInputBody,
  AgentSuspensionResponse,
  AgentSuspensionUpdateResponse,
  AgentUpdateInputBody,
  ListBodyAgentResponse,
} from '../../shared/dto/agents.js';
import type { OKResponseBody } from '../../shared/dto/common.js';
import type { ErrorModel } from '../../shared/dto/errors.js';
import { decodeToken, encodeToken, invalidToken } from '../../shared/http/page-token.js';
import type { CityRuntime } from '../city-runtime.js';
import { blockUntilChanged } from './blocking.js';
import type { AgentDefinition } from '../agent-catalog/agent-catalog.js';
import { AgentEditor } from '../config/agent-editor.js';
import { agentOutput, agentResponse, primarySession, requireAgent } from '../agents/agent-views.js';
import { putSuspension, setAgentSuspended, suspensionView } from '../agents/agent-suspension.js';

const PEEK_LINES = 20;

/**
 * @param cityName City name.
 * @param base Agent name (for an agent of a rig, its name without the rig).
 * @param dir The rig (directory) of a rig's agent.
 * @pattern cityName \S
 */
@Route('v0/city/{cityName}')
@Tags('Agents')
@Response<ErrorModel>(404, 'City not running, or no such agent (`agent-not-found`)')
export class AgentsRoutes extends Controller {
  constructor(private readonly city: CityRuntime) {
    super();
  }

  /**
   * The city's agents (from `city.toml`'s `[[agent]]` tables and `agents/<name>/` directories), each with its
   * derived `state`, its sessions and its work.
   * @summary List agents
   * @param pool Only the pool of this name (`true`: only pools).
   * @param rig Only the agents of this rig.
   * @param running `true`: only agents with a running session; `false`: only those without.
   * @param peek Add `last_output`: each running program's screen (a terminal's), or its latest output's last
   * lines. Without it the list has no `last_output`.
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
  @Get('agents')
  @SuccessResponse<{ 'X-CTL-Index': string }>(200, 'OK')
  @Response<ErrorModel>(400, 'Invalid cursor')
  @Response<ErrorModel>(422, 'Invalid query')
  public async listAgents(
    @Path() cityName: string,
    @Query() pool?: string,
    @Query() rig?: string,
    @Query() running?: boolean,
    @Query() peek?: boolean,
    @Query() limit?: number,
    @Query() cursor?: string,
    @Query() index?: number,
    @Query() wait?: string,
  ): Promise<ListBodyAgentResponse> {
    this.setHeader('X-CTL-Index', String(await blockUntilChanged(this.city, index, wait)));
    let agents = [...this.city.agents].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    if (pool !== undefined) agents = agents.filter((a) => a.isPool && (pool === 'true' || a.name === pool));
    if (rig !== undefined) agents = agents.filter((a) => a.rig === rig);
    let views = agents.map((a) => agentResponse(this.city, a));
    if (running !== undefined) views = views.filter((v) => v.running === running);
    const total = views.length;
    let from = 0;
    if (cursor !== undefined) {
      const after = decodeToken(cursor, 'ag').n;
      if (typeof after !== 'string') throw invalidToken();
      from = views.findIndex((v) => v.name > after);
      if (from < 0) from = views.length;
    }
    const size = limit || 100;
    const items = views.slice(from, from + size);
    if (peek) await Promise.all(items.map((view) => this.peekInto(view)));
    const more = from + size < views.length;
    return { items, total, ...(more ? { next_cursor: encodeToken('ag', { n: items.at(-1)!.name }) } : {}) };
  }

  /**
   * Adds an `[[agent]]` table to `city.toml` (the rest of the file kept as it was) and loads it at once: `GET
   * /agents` lists it, and the tick starts its `min_active_sessions` (one, when no pool size is given).
   * @summary Create an agent
   */
  @Post('agents')
  @SuccessResponse(201, 'Created')
  @Response<ErrorModel>(409, 'The name is taken, or city.toml on disk is not valid (fix it by hand first)')
  @Response<ErrorModel>(422, 'Invalid body: the field at fault in `errors` (an unknown provider, a bad name, …)')
  public createAgent(@Path() cityName: string, @Body() body: AgentCreateInputBody): AgentCreatedOutputBody {
    const agent = new AgentEditor(this.city).create(body);
    this.setStatus(201);
    return { status: 'created', agent };
  }

  /**
   * The agent's conversation: its running session's transcript (else its latest session's), as turns.
   * @summary Agent output
   * @param tail How many transcript entries, newest last (default 100, at most 1000; 0 means the default).
   * @param before Only entries before this transcript seq (an earlier page).
   * @isInt tail
   * @minimum tail 0
   * @isInt before
   * @minimum before 1
   */
  @Get('agent/{base}/output')
  @Response<ErrorModel>(422, 'Invalid query')
  public getAgentOutput(
    @Path() cityName: string,
    @Path() base: string,
    @Query() tail?: number,
    @Query() before?: number,
  ): AgentOutputResponse {
    return agentOutput(this.city, requireAgent(this.city, base), { tail, before });
  }

  /**
   * A rig's agent's conversation.
   * @summary Agent output (rig agent)
   * @isInt tail
   * @minimum tail 0
   * @isInt before
   * @minimum before 1
   */
  @Get('agent/{dir}/{base}/output')
  @Response<ErrorModel>(422, 'Invalid query')
  public getQualifiedAgentOutput(
    @Path() cityName: string,
    @Path() dir: string,
    @Path() base: string,
    @Query() tail?: number,
    @Query() before?: number,
  ): AgentOutputResponse {
    return agentOutput(this.city, requireAgent(this.city, `${dir}/${base}`), { tail, before });
  }

  /**
   * One agent, with its session's latest output as `last_output`.
   * @summary Get an agent
   */
  @Get('agent/{base}')
  public getAgent(@Path() cityName: string, @Path() base: string): AgentResponse {
    return agentResponse(this.city, requireAgent(this.city, base), true);
  }

  /**
   * One agent of a rig.
   * @summary Get a rig's agent
   */
  @Get('agent/{dir}/{base}')
  public getQualifiedAgent(@Path() cityName: string, @Path() dir: string, @Path() base: string): AgentResponse {
    return agentResponse(this.city, requireAgent(this.city, `${dir}/${base}`), true);
  }

  /**
   * Changes the agent in the file it is declared in. Sessions pick the change up once idle (a session in a turn,
   * or one somebody is attached to, restarts when it is idle; the agent shows `restart_pending` meanwhile).
   * @summary Update an agent
   */
  @Patch('agent/{base}')
  @Response<ErrorModel>(409, 'The file on disk is not valid, or cannot be edited safely')
  @Response<ErrorModel>(
    422,
    'Invalid body: the field at fault in `errors`; or the city the edit would leave is not valid (named)',
  )
  public updateAgent(
    @Path() cityName: string,
    @Path() base: string,
    @Body() body: AgentUpdateInputBody,
  ): AgentResponse {
    return this.update(requireAgent(this.city, base), body);
  }

  /**
   * Changes a rig's agent.
   * @summary Update a rig's agent
   */
  @Patch('agent/{dir}/{base}')
  @Response<ErrorModel>(409, 'The file on disk is not valid, or cannot be edited safely')
  @Response<ErrorModel>(
    422,
    'Invalid body: the field at fault in `errors`; or the city the edit would leave is not valid (named)',
  )
  public updateQualifiedAgent(
    @Path() cityName: string,
    @Path() dir: string,
    @Path() base: string,
    @Body() body: AgentUpdateInputBody,
  ): AgentResponse {
    return this.update(requireAgent(this.city, `${dir}/${base}`), body);
  }

  /**
   * Removes the agent's `[[agent]]` table from `city.toml`. Its sessions finish their turn, then close.
   * @summary Delete an agent
   */
  @Delete('agent/{base}')
  @Response<ErrorModel>(409, 'An agent of its own directory (remove the directory), or city.toml is not valid')
  @Response<ErrorModel>(422, 'The city the edit would leave is not valid (named; city.toml is left as it was)')
  public deleteAgent(@Path() cityName: string, @Path() base: string): OKResponseBody {
    new AgentEditor(this.city).remove(requireAgent(this.city, base));
    return { status: 'ok' };
  }

  /**
   * Removes a rig's agent.
   * @summary Delete a rig's agent
   */
  @Delete('agent/{dir}/{base}')
  @Response<ErrorModel>(409, 'An agent of its own directory (remove the directory), or city.toml is not valid')
  @Response<ErrorModel>(422, 'The city the edit would leave is not valid (named; city.toml is left as it was)')
  public deleteQualifiedAgent(@Path() cityName: string, @Path() dir: string, @Path() base: string): OKResponseBody {
    new AgentEditor(this.city).remove(requireAgent(this.city, `${dir}/${base}`));
    return { status: 'ok' };
  }

  /**
   * `suspend`: writes `suspended = true` for the agent; its sessions finish their turn, then stop, and none
   * starts. `resume`: removes it, forgets the agent's failures and wakes a quarantined session. Either is
   * idempotent: asking for the state it is in changes nothing. Records `agent.suspended` / `agent.resumed`.
   * @summary Suspend or resume an agent
   * @param action `suspend` or `resume`.
   */
  @Post('agent/{base}/{action}')
  @Response<ErrorModel>(409, 'The file on disk is not valid')
  @Response<ErrorModel>(422, 'Unknown action, or the city the edit would leave is not valid (named)')
  public async agentAction(
    @Path() cityName: string,
    @Path() base: string,
    @Path() action: 'suspend' | 'resume',
  ): Promise<OKResponseBody> {
    await this.act(requireAgent(this.city, base), action);
    return { status: 'ok' };
  }

  /**
   * Suspends or resumes a rig's agent.
   * @summary Suspend or resume a rig's agent
   * @param action `suspend` or `resume`.
   */
  @Post('agent/{dir}/{base}/{action}')
  @Response<ErrorModel>(409, 'The file on disk is not valid')
  @Response<ErrorModel>(422, 'Unknown action, or the city the edit would leave is not valid (named)')
  public async qualifiedAgentAction(
    @Path() cityName: string,
    @Path() dir: string,
    @Path() base: string,
    @Path() action: 'suspend' | 'resume',
  ): Promise<OKResponseBody> {
    await this.act(requireAgent(this.city, `${dir}/${base}`), action);
    return { status: 'ok' };
  }

  /**
   * Whether the agent is to be suspended (its desired state: `suspended` in its config; its sessions may still be
   * finishing a turn), and its content token, which `PUT` names to change it only if the agent is as it was read.
   * @summary Get an agent's suspension
   */
  @Get('agent-suspension/{base}')
  public getAgentSuspension(@Path() cityName: string, @Path() base: string): AgentSuspensionResponse {
    return suspensionView(requireAgent(this.city, base));
  }

  /**
   * A rig's agent's suspension and content token.
   * @summary Get a rig's agent's suspension
   */
  @Get('agent-suspension/{dir}/{base}')
  public getQualifiedAgentSuspension(
    @Path() cityName: string,
    @Path() dir: string,
    @Path() base: string,
  ): AgentSuspensionResponse {
    return suspensionView(requireAgent(this.city, `${dir}/${base}`));
  }

  /**
   * Suspends or resumes the agent as `POST …/suspend` and `…/resume` do (recording `agent.suspended` /
   * `agent.resumed`), only if it is still as it was when `expected_token` was read: any change to it since is a
   * 409 (`conflict-concurrent-modify`), nothing written. An agent already in the desired state is answered
   * `already_desired: true`, nothing written, whatever the token. The answer carries the new token.
   * @summary Suspend or resume an agent if unchanged
   */
  @Put('agent-suspension/{base}')
  @Response<ErrorModel>(409, 'The agent changed since the token was read, or the file on disk is not valid')
  @Response<ErrorModel>(422, 'Invalid body, or the city the edit would leave is not valid (named)')
  public putAgentSuspension(
    @Path() cityName: string,
    @Path() base: string,
    @Body() body: AgentSuspensionInputBody,
  ): Promise<AgentSuspensionUpdateResponse> {
    return putSuspension(this.city, requireAgent(this.city, base), body);
  }

  /**
   * Suspends or resumes a rig's agent if it is unchanged since its token was read.
   * @summary Suspend or resume a rig's agent if unchanged
   */
  @Put('agent-suspension/{dir}/{base}')
  @Response<ErrorModel>(409, 'The agent changed since the token was read, or the file on disk is not valid')
  @Response<ErrorModel>(422, 'Invalid body, or the city the edit would leave is not valid (named)')
  public putQualifiedAgentSuspension(
    @Path() cityName: string,
    @Path() dir: string,
    @Path() base: string,
    @Body() body: AgentSuspensionInputBody,
  ): Promise<AgentSuspensionUpdateResponse> {
    return putSuspension(this.city, requireAgent(this.city, `${dir}/${base}`), body);
  }

  private update(agent: AgentDefinition, body: AgentUpdateInputBody): AgentResponse {
    new AgentEditor(this.city).update(agent, body);
    return agentResponse(this.city, this.city.agent(agent.name) ?? agent);
  }

  private act(agent: AgentDefinition, action: 'suspend' | 'resume'): Promise<void> {
    return setAgentSuspended(this.city, agent, action === 'suspend');
  }

  private async peekInto(view: AgentResponse): Promise<void> {
    const agent = this.city.agent(view.name);
    const session = agent && primarySession(this.city, agent);
    if (!session?.running) return;
    const peeked = await session.peekView(PEEK_LINES);
    if (peeked.last_output) view.last_output = peeked.last_output;
  }
}
