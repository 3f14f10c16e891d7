import { Body, Controller, Get, Patch, Path, Post, Query, Response, Route, SuccessResponse, Tags } from '@tsoa/runtime';
import type { ErrorModel } from '../../shared/dto/errors.js';
import type {
  AsyncAcceptedBody,
  CityPendingListBody,
  ListBodySessionResponse,
  OKWithIDResponseBody,
  SessionAgentGetResponse,
  SessionAgentListResponse,
  SessionCloseResponse,
  SessionCreateBody,
  SessionHookBody,
  SessionHookResponse,
  SessionMessageInputBody,
  SessionPatchBody,
  SessionPendingResponse,
  SessionPermissionModeBody,
  SessionPrimeResponse,
  SessionRenameInputBody,
  SessionRespondAcceptedBody,
  SessionRespondInputBody,
  SessionResetResponse,
  SessionResponse,
  SessionState,
  SessionSubmitInputBody,
  SessionTranscriptResponse,
} from '../../shared/dto/sessions.js';
import { briefSession } from '../agents/session-briefing.js';
import type { CityRuntime } from '../city-runtime.js';

/**
 * @param cityName City name.
 * @param id Session id, alias or session name.
 * @pattern cityName \S
 */
@Route('v0/city/{cityName}')
@Tags('Sessions')
@Response<ErrorModel>(404, 'City not running, or no such session (`session-not-found`)')
export class SessionsRoutes extends Controller {
  constructor(private readonly city: CityRuntime) {
    super();
  }

  /**
   * The city's sessions, newest first: those not closed, or with `state` only those in it (`closed` and `all`
   * include closed ones). With `peek`, each running session's `last_output` is what its program shows now, its
   * last `peek_lines` lines (a terminal session's screen; the latest output of the others), as
   * `GET /session/{id}?peek=true` gives it; a session not running keeps its last output as it was.
   * @summary List sessions
   * @param state A lifecycle state (`active`, `asleep`, …), `closed`, or `all`.
   * @param template Only sessions of this agent or provider.
   * @param limit Page size, 1–1000 (default 100; 0 means the default).
   * @param cursor `next_cursor` of the previous page.
   * @param peek Read what each running program shows now into `last_output`.
   * @param peek_lines How many lines `peek` reads (1–10000, default 5).
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   * @isInt peek_lines
   * @minimum peek_lines 1
   * @maximum peek_lines 10000
   */
  @Get('sessions')
  @Response<ErrorModel>(400, 'Invalid cursor')
  @Response<ErrorModel>(422, 'Invalid limit, state or peek_lines')
  public async listSessions(
    @Path() cityName: string,
    @Query() state?: SessionState | 'all',
    @Query() template?: string,
    @Query() limit?: number,
    @Query() cursor?: string,
    @Query() peek?: boolean,
    @Query() peek_lines?: number,
  ): Promise<ListBodySessionResponse> {
    const page = this.city.sessions.list({ state, template, limit: limit || 100, cursor });
    if (peek) page.items = await this.city.sessions.peekAll(page.items, peek_lines ?? 5);
    return page;
  }

  /**
   * Creates a session of a provider (`kind: provider`, the default) or an agent (`kind: agent`) and starts its
   * program. Answers 202 at once with the new session's id; `request.result.session.create` (`request_id`,
   * `session_id`) follows on the city log once its program is ready, or `request.failed` with the reason (a
   * program that cannot be found or exits at once). A first `message` is delivered as its first turn. An agent's
   * session runs on a host of its `hosts`, placed as the tick places its own (`host` in the session).
   * @summary Create a session (asynchronous)
   */
  @Post('sessions')
  @SuccessResponse(202, 'Accepted')
  @Response<ErrorModel>(
    409,
    'The alias already names another session; the agent is unavailable, or no host of its `hosts` can take a session (why, named)',
  )
  @Response<ErrorModel>(
    422,
    'Invalid body, an unknown permission mode, a provider this controller cannot run, or an agent whose prompt template cannot be rendered (past a bound of rendering, or calling itself)',
  )
  public createSession(@Path() cityName: string, @Body() body: SessionCreateBody): AsyncAcceptedBody {
    this.setStatus(202);
    return this.city.sessions.create(body);
  }

  /**
   * One session: its lifecycle `state`, whether its program is `running`, its `activity`, `last_output`, any
   * `pending` interaction and undelivered (`queued`) messages. With `peek`, `last_output` is what the program
   * shows now, its last `peek_lines` lines (a terminal session's screen; the latest output of the others). A
   * session with its own git worktree shows its branch's state (`worktree`: head, dirty, ahead and behind its
   * base), read with git, and in a rig the other sessions and waiting reviews whose branches changed the same files
   * (`worktree.overlaps`).
   * @summary Get a session
   * @param peek Read what the program shows now into `last_output`.
   * @param peek_lines How many lines `peek` reads (1–10000, default 5).
   * @isInt peek_lines
   * @minimum peek_lines 1
   * @maximum peek_lines 10000
   */
  @Get('session/{id}')
  @Response<ErrorModel>(422, 'A bad peek or peek_lines')
  public async getSession(
    @Path() cityName: string,
    @Path() id: string,
    @Query() peek?: boolean,
    @Query() peek_lines?: number,
  ): Promise<SessionResponse> {
    const view = await (peek ? this.city.sessions.peek(id, peek_lines ?? 5) : this.city.sessions.view(id));
    const record = view.worktree && view.state !== 'closed' ? this.city.sessions.recordOf(view.id) : undefined;
    if (view.worktree && record) {
      const overlaps = await this.city.overlaps.ofSession(record);
      if (overlaps) view.worktree.overlaps = overlaps;
    }
    return view;
  }

  /**
   * Changes a session's title or alias. Records `session.updated`.
   * @summary Update a session
   */
  @Patch('session/{id}')
  @Response<ErrorModel>(409, 'Closed, or the alias names another session')
  @Response<ErrorModel>(422, 'Invalid body')
  public patchSession(
    @Path() cityName: string,
    @Path() id: string,
    @Body() body: SessionPatchBody,
  ): Promise<SessionResponse> {
    return this.city.sessions.update(id, body);
  }

  /**
   * Sends a message: delivered to the program as soon as it can take it, after any messages before it; a
   * session still starting gets it once it is ready; an asleep or suspended one wakes (resuming its
   * conversation where the provider can) and gets it as its first turn. Answers 202;
   * `request.result.session.message` (`request_id`, `session_id`, `message_id`) follows on the city log once
   * the program has it, or `request.failed` when it went away first.
   * @summary Send a message (asynchronous)
   */
  @Post('session/{id}/messages')
  @SuccessResponse(202, 'Accepted')
  @Response<ErrorModel>(409, 'Closed or quarantined')
  @Response<ErrorModel>(422, 'Empty message')
  public sendMessage(
    @Path() cityName: string,
    @Path() id: string,
    @Body() body: SessionMessageInputBody,
  ): AsyncAcceptedBody {
    this.setStatus(202);
    return this.city.sessions.send(id, body.message, 'default', 'session.message');
  }

  /**
   * Submits a message with an intent: `default` (as `messages`), `follow_up` (after the current turn ends), or
   * `interrupt_now` (the current turn is stopped first). `request.result.session.submit` follows once the
   * program has it, saying whether it waited (`queued`).
   * @summary Submit a message (asynchronous)
   */
  @Post('session/{id}/submit')
  @SuccessResponse(202, 'Accepted')
  @Response<ErrorModel>(409, 'Closed or quarantined')
  @Response<ErrorModel>(422, 'Empty message or unknown intent')
  public submit(@Path() cityName: string, @Path() id: string, @Body() body: SessionSubmitInputBody): AsyncAcceptedBody {
    this.setStatus(202);
    return this.city.sessions.send(id, body.message, body.intent ?? 'default', 'session.submit');
  }

  /**
   * Ends the current turn (the program keeps running): `status: ok`, or `idle` when no turn was in progress.
   * @summary Stop the current turn
   */
  @Post('session/{id}/stop')
  @Response<ErrorModel>(409, 'Not running')
  public stopSession(@Path() cityName: string, @Path() id: string): Promise<OKWithIDResponseBody> {
    return this.city.sessions.interrupt(id);
  }

  /**
   * Ends the session's program; the session sleeps (a message or `wake` starts it again). Records
   * `session.stopped`.
   * @summary Kill a session's program
   */
  @Post('session/{id}/kill')
  @Response<ErrorModel>(409, 'Not running')
  public killSession(@Path() cityName: string, @Path() id: string): Promise<OKWithIDResponseBody> {
    return this.city.sessions.kill(id);
  }

  /**
   * Suspends a session: its program ends, and it stays suspended until a message or `wake`. Records
   * `session.suspended`.
   * @summary Suspend a session
   */
  @Post('session/{id}/suspend')
  @Response<ErrorModel>(409, 'A state suspend is not allowed from')
  public suspendSession(@Path() cityName: string, @Path() id: string): Promise<SessionResponse> {
    return this.city.sessions.suspend(id);
  }

  /**
   * Gives the session a fresh conversation, keeping the session (its id, name, alias, worktree, mail and work):
   * its provider's conversation is no longer resumed — Claude Code starts without `--resume`, Codex `exec` on a
   * new thread, an ACP agent with `session/new`, a program that cannot resume is started again. A running
   * program is restarted at once (messages still queued for it fail, as at a stop); a dormant session begins the
   * new conversation at its next start. The transcript gets a `reset` entry where the new conversation begins
   * (`transcript_seq`); an agent's session is given its agent's prompt again. Records `session.reset`.
   * @summary Reset a session's conversation
   */
  @Post('session/{id}/reset')
  @Response<ErrorModel>(409, 'Closed, or being started, drained or restarted (`conflict:`)')
  public resetSession(@Path() cityName: string, @Path() id: string): Promise<SessionResetResponse> {
    return this.city.sessions.reset(id);
  }

  /**
   * Starts a dormant session's program again (asleep, suspended, quarantined, archived, failed), resuming the
   * provider's conversation where it can. Records `session.woke` once the program is ready.
   * @summary Wake a session
   */
  @Post('session/{id}/wake')
  @Response<ErrorModel>(409, 'Already running, or a state wake is not allowed from')
  public wakeSession(@Path() cityName: string, @Path() id: string): Promise<SessionResponse> {
    return this.city.sessions.wake(id);
  }

  /**
   * Closes a session: its program ends and it is done (its transcript stays readable). With `delete=true` its
   * bead and transcript are removed too. Records `session.closed`. A session with its own git worktree has it
   * removed (with its branch) when it holds nothing its base lacks; otherwise it is kept, and `worktree` (in the
   * answer and the event) says why.
   * @summary Close a session
   * @param remove Remove the session and its transcript as well (the query parameter `delete`).
   */
  @Post('session/{id}/close')
  @Response<ErrorModel>(409, 'Already closed')
  @Response<ErrorModel>(422, 'Invalid delete')
  public closeSession(
    @Path() cityName: string,
    @Path() id: string,
    @Query('delete') remove?: boolean,
  ): Promise<SessionCloseResponse> {
    return this.city.sessions.close(id, remove === true);
  }

  /**
   * Renames a session (its title). Records `session.updated`.
   * @summary Rename a session
   */
  @Post('session/{id}/rename')
  @Response<ErrorModel>(409, 'Closed')
  @Response<ErrorModel>(422, 'Invalid body')
  public renameSession(
    @Path() cityName: string,
    @Path() id: string,
    @Body() body: SessionRenameInputBody,
  ): Promise<SessionResponse> {
    return this.city.sessions.update(id, { title: body.title });
  }

  /**
   * Sets the permission mode, one of its provider's: at once where the program can change it while running
   * (Claude Code), else when it next starts (`reason` says which). Records `session.updated`.
   * @summary Set the permission mode
   */
  @Post('session/{id}/permission-mode')
  @Response<ErrorModel>(409, 'Closed')
  @Response<ErrorModel>(422, 'Not a permission mode of its provider')
  public setPermissionMode(
    @Path() cityName: string,
    @Path() id: string,
    @Body() body: SessionPermissionModeBody,
  ): Promise<SessionResponse> {
    return this.city.sessions.setPermissionMode(id, body.permission_mode);
  }

  /**
   * What the session needs in a turn: its agent's role prompt (its template filled in), the bead it holds now,
   * its unread mail (to its agent, or to it by session name), and all of it as `text` — what `ctl prime` prints
   * for a hook or a first turn. A closed session is gone: 404. A prompt template past a bound of rendering is
   * never sent, nor sent as its text: 422, naming the template and the limit.
   * @summary Prime a session (its role, work and mail)
   */
  @Get('session/{id}/prime')
  @Response<ErrorModel>(
    422,
    "Its agent's prompt template cannot be rendered: past a bound of rendering (its size, its work, its nesting), or calling itself",
  )
  public primeSession(@Path() cityName: string, @Path() id: string): SessionPrimeResponse {
    const { city } = this;
    return briefSession(
      { cityName: city.name, sessions: city.sessions, beads: city.beads, mail: city.mail, agents: city.agents },
      id,
    );
  }

  /**
   * What a hook of the session's program reported — what `ctl hook-event` posts, run by the hooks of the
   * settings file a session in tmux is started with (Claude Code's `UserPromptSubmit`, `PreToolUse`,
   * `PermissionRequest`, `Notification`, `Stop`, …, with the JSON the hook read on its stdin as `input`). Its
   * runtime takes its turns' ends and permission prompts from them instead of its screen (`applied`; a runtime
   * with no use for hooks leaves it). A closed session is gone: 404, and nothing changes; a session whose program
   * is not running: 409.
   * @summary Report a hook of the session's program
   */
  @Post('session/{id}/hook')
  @Response<ErrorModel>(409, 'Its program is not running')
  @Response<ErrorModel>(422, 'An unknown hook event, or a body that is not an object')
  public hook(@Path() cityName: string, @Path() id: string, @Body() body: SessionHookBody): SessionHookResponse {
    return this.city.sessions.hook(id, body.event, body.input);
  }

  /**
   * The question or permission request the session's program is waiting on, if any.
   * @summary Get a session's pending interaction
   */
  @Get('session/{id}/pending')
  public getSessionPending(@Path() cityName: string, @Path() id: string): SessionPendingResponse {
    return this.city.sessions.pending(id);
  }

  /**
   * Answers the pending interaction: `allow` or `deny` a permission request (`text`: a reason), `answer` a
   * question (`text`: the answer). The answer goes to the program; `session.pending_cleared` follows.
   * @summary Answer a pending interaction
   */
  @Post('session/{id}/respond')
  @SuccessResponse(202, 'Accepted')
  @Response<ErrorModel>(409, 'Nothing pending (or another interaction is)')
  @Response<ErrorModel>(422, 'An action that does not answer it')
  public async respond(
    @Path() cityName: string,
    @Path() id: string,
    @Body() body: SessionRespondInputBody,
  ): Promise<SessionRespondAcceptedBody> {
    const accepted = await this.city.sessions.respond(id, body);
    this.setStatus(202);
    return accepted;
  }

  /**
   * The session's own transcript: `format=conversation` (turns: role, text, time; a reply's pieces joined per
   * turn), `raw` (the entries as stored), or `structured` (the reference's `session.structured.v1`: messages of
   * typed blocks — text, thinking, tool_use, tool_result, interaction — with the page's `history`: the cursor to go
   * on from, compactions, open tool calls, a pending question). A `thinking` block's text and signature are given
   * only with `include_thinking=true`; the block stays, redacted, otherwise. The newest `tail` entries (default 100, at most 1000), those before
   * seq `before`, or those after seq `after`.
   * @summary Get a session's transcript
   * @param format `conversation` (default), `raw` or `structured`.
   * @param include_thinking `structured`: give thinking blocks' text and signature (default false: redacted).
   * @param tail How many entries.
   * @param before Entries with a seq below this.
   * @param after Entries with a seq above this (oldest first).
   * @isInt tail
   * @minimum tail 0
   * @maximum tail 1000
   * @isInt before
   * @minimum before 1
   * @isInt after
   * @minimum after 0
   */
  @Get('session/{id}/transcript')
  @Response<ErrorModel>(422, 'Invalid format, tail, before or after')
  public getTranscript(
    @Path() cityName: string,
    @Path() id: string,
    @Query() format?: 'conversation' | 'raw' | 'structured',
    @Query() tail?: number,
    @Query() before?: number,
    @Query() after?: number,
    @Query() include_thinking?: boolean,
  ): SessionTranscriptResponse {
    return this.city.sessions.transcript(id, {
      format,
      tail,
      before,
      after,
      ...(include_thinking ? { includeThinking: true } : {}),
    });
  }

  /**
   * The subagents the session's program started (Claude Code's Task/Agent tool), oldest first, each with the
   * tool call of the session's transcript that started it; empty when it started none. Their turns are kept
   * apart from the session's own, which show the call and its result.
   * @summary List a session's subagents
   */
  @Get('session/{id}/agents')
  public listSessionAgents(@Path() cityName: string, @Path() id: string): SessionAgentListResponse {
    return { agents: this.city.sessions.find(id).subagents.list() };
  }

  /**
   * One subagent's own transcript (its prompt, replies, tool calls and results, its end) and its status.
   * @summary Get a session's subagent
   * @param agentId The subagent's id (`agent_id` in the session's list of agents).
   */
  @Get('session/{id}/agents/{agentId}')
  @Response<ErrorModel>(404, 'No such session, or no such subagent in it (`agent-not-found`)')
  public getSessionAgent(
    @Path() cityName: string,
    @Path() id: string,
    @Path() agentId: string,
  ): SessionAgentGetResponse {
    return this.city.sessions.find(id).subagents.get(agentId);
  }

  /**
   * Every pending interaction of the city's sessions, oldest first.
   * @summary List pending interactions
   * @param limit Page size, 1–1000 (default 100; 0 means the default).
   * @param cursor `next_cursor` of the previous page.
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   */
  @Get('pending')
  @Response<ErrorModel>(400, 'Invalid cursor')
  @Response<ErrorModel>(422, 'Invalid limit')
  public listPending(
    @Path('cityName') _cityName: string,
    @Query() limit?: number,
    @Query() cursor?: string,
  ): CityPendingListBody {
    return this.city.sessions.cityPending(limit || 100, cursor);
  }
}
