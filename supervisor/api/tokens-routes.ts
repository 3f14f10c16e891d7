import type { Request as KoaRequest } from 'koa';
import {
  Body,
  Controller,
  Delete,
  Get,
  Path,
  Post,
  Query,
  Request,
  Response,
  Route,
  SuccessResponse,
  Tags,
} from '@tsoa/runtime';
import type { ErrorModel } from '../../shared/dto/errors.js';
import type {
  AuthCodeResponse,
  TokenCreateRequest,
  TokenCreateResponse,
  TokenEventPayload,
  TokenInfo,
  TokenListResponse,
} from '../../shared/dto/tokens.js';
import { decodeToken, encodeToken, invalidToken } from '../../shared/http/page-token.js';
import { Problem } from '../../shared/http/problem.js';
import { SESSION_COOKIE } from '../browser-sessions.js';
import { callerOf, type Caller } from '../caller.js';
import type { SupervisorServices } from './ioc.js';

@Route('v0')
@Tags('Access')
export class TokensRoutes extends Controller {
  constructor(private readonly services: SupervisorServices) {
    super();
  }

  /**
   * The API tokens, by name: never their secrets. Only the supervisor's user (or one `allow_users` or
   * `allow_groups` names) manages tokens; a request made with a token or a browser session is refused (403).
   * @summary List API tokens
   * @param limit Page size, 1–1000 (default 100; 0 means the default).
   * @param cursor `next_cursor` of the previous page.
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   */
  @Get('tokens')
  @Response<ErrorModel>(400, 'Invalid `cursor`')
  @Response<ErrorModel>(403, 'Made with a token or a browser session, not by a local user the rule lets in')
  @Response<ErrorModel>(422, 'Invalid `limit`')
  public listTokens(
    @Request() request: KoaRequest,
    @Query() limit?: number,
    @Query() cursor?: string,
  ): TokenListResponse {
    managerOf(request);
    const after = cursor !== undefined && cursor !== '' ? decodeTokenCursor(cursor) : undefined;
    const all = this.services.tokens.list().sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const rest = after === undefined ? all : all.filter((token) => token.name > after);
    const items = rest.slice(0, limit || DEFAULT_PAGE);
    const body: TokenListResponse = { items, total: all.length };
    if (rest.length > items.length) body.next_cursor = encodeToken('tn', { n: items.at(-1)!.name });
    return body;
  }

  /**
   * Creates a token and returns its secret (`token`) this once; the supervisor keeps only its SHA-256, in
   * `$CTL_HOME/tokens.json` (mode 0600). Send it as `Authorization: Bearer <token>`: it is accepted from any
   * account and any address. A `read_only` token is refused every mutation (403). Records `token.created` in the
   * supervisor's log (never the secret).
   * @summary Create an API token
   */
  @Post('tokens')
  @SuccessResponse(201, 'Created')
  @Response<ErrorModel>(403, 'Made with a token or a browser session, not by a local user the rule lets in')
  @Response<ErrorModel>(409, 'A token of that name exists')
  @Response<ErrorModel>(422, 'An invalid name or `expires_in`')
  public async createToken(
    @Request() request: KoaRequest,
    @Body() body: TokenCreateRequest,
  ): Promise<TokenCreateResponse> {
    const manager = managerOf(request);
    const created = this.services.tokens.create(body, manager);
    await this.record('token.created', created);
    this.setStatus(201);
    this.setHeader('Cache-Control', 'no-store');
    return created;
  }

  /**
   * Revokes a token: requests carrying it are refused from now on (401), and browser sessions made from it end.
   * Records `token.revoked`.
   * @summary Revoke an API token
   */
  @Delete('tokens/{name}')
  @SuccessResponse(204, 'Revoked')
  @Response<ErrorModel>(403, 'Made with a token or a browser session, not by a local user the rule lets in')
  @Response<ErrorModel>(404, 'No token of that name')
  public async revokeToken(@Request() request: KoaRequest, @Path() name: string): Promise<void> {
    managerOf(request);
    const token = this.services.tokens.list().find((t) => t.name === name);
    this.services.tokens.revoke(name);
    this.services.sessions.endFor(name);
    if (token) await this.record('token.revoked', token);
    this.setStatus(204);
  }

  /** A token change in the supervisor's log, its actor the manager (the event log reads it from the request). */
  private async record(type: 'token.created' | 'token.revoked', token: TokenInfo): Promise<void> {
    const payload: TokenEventPayload = {
      name: token.name,
      read_only: token.read_only,
      ...(token.expires_at ? { expires_at: token.expires_at } : {}),
    };
    await this.services.supervisorLog.append({ type, actor: 'api', subject: token.name, payload });
  }

  /**
   * Mints a one-time code for a browser: opening `url` (within a minute, once) sets a session cookie standing for
   * the caller — the local user, or the token used here, read-only if it is — and redirects to `/ui/`. This is
   * how a token reaches a browser without ever being in a URL.
   * @summary Mint a one-time browser sign-in code
   */
  @Post('auth/codes')
  @SuccessResponse(201, 'Created')
  public mintAuthCode(@Request() request: KoaRequest): AuthCodeResponse {
    const caller = callerOf(request.req)!;
    if (caller.viaCookie) {
      throw new Problem('forbidden', 'forbidden: a browser session cannot mint sign-in codes');
    }
    const { code, expiresAt } = this.services.sessions.mint({ ...caller, viaCookie: undefined });
    this.setStatus(201);
    this.setHeader('Cache-Control', 'no-store');
    return {
      code,
      url: `/v0/auth/exchange?code=${encodeURIComponent(code)}`,
      expires_at: new Date(expiresAt).toISOString(),
    };
  }

  /**
   * Spends a one-time code (from `POST /v0/auth/codes`): sets the `ctl_session` cookie (HttpOnly,
   * SameSite=Strict, Path=/) and redirects to `/ui/`, or to the dashboard page `to` names (303). Served to anyone:
   * the code is the credential. An unknown, used or expired code is a 401.
   * @summary Exchange a one-time code for a browser session
   * @param code The code `POST /v0/auth/codes` returned.
   * @param to A page of the dashboard to land on (a path under `/ui/`, as `ctl top` opens a session's page).
   */
  @Get('auth/exchange')
  @SuccessResponse(303, 'Signed in: to /ui/ or the page `to` names')
  @Response<ErrorModel>(400, 'A `to` that is not a path under /ui/')
  @Response<ErrorModel>(401, 'An unknown, used or expired code')
  public exchangeAuthCode(@Query() code: string, @Query() to?: string): void {
    // Checked before the code is spent, and only a path of ours: never a redirect off the machine.
    if (to !== undefined && !isDashboardPath(to)) {
      throw new Problem('invalid-request', `invalid: to ${JSON.stringify(to)}: expected a path under /ui/`);
    }
    const { session, maxAgeSec } = this.services.sessions.exchange(code, (caller, now) =>
      sessionEnd(this.services, caller, now),
    );
    this.setStatus(303);
    this.setHeader('Location', to ?? '/ui/');
    this.setHeader('Cache-Control', 'no-store');
    // The code must not travel on to /ui/'s requests as a Referer.
    this.setHeader('Referrer-Policy', 'no-referrer');
    this.setHeader(
      'Set-Cookie',
      `${SESSION_COOKIE}=${session}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSec}`,
    );
  }
}

/** A path of the dashboard: `/ui/…`, with nothing that could make a browser leave the supervisor. */
function isDashboardPath(to: string): boolean {
  return to.startsWith('/ui/') && !/[\\\s]|\/\/|\/\.\.?(\/|$)/.test(to);
}

/** The local user managing tokens; a token holder (or a browser session) may not mint or see others' tokens. */
function managerOf(request: KoaRequest): string {
  const caller = callerOf(request.req);
  if (caller?.kind !== 'user' || caller.viaCookie) {
    throw new Problem(
      'forbidden',
      "forbidden: tokens are managed by the supervisor's user (or one allow_users or allow_groups names), not with a token",
    );
  }
  return caller.name;
}

/** A session made from a token ends no later than the token. */
function sessionEnd(services: SupervisorServices, caller: Caller, now: number): number {
  if (caller.kind !== 'token') return Infinity;
  const info = services.tokens.list(now).find((t) => t.name === caller.name);
  return info?.expires_at ? Date.parse(info.expires_at) : Infinity;
}

const DEFAULT_PAGE = 100;

/** A token page's cursor: `v1:` + base64url of {"k":"tn","n":<name>}, the last token of the page (names sort). */
function decodeTokenCursor(cursor: string): string {
  const { n } = decodeToken(cursor, 'tn');
  if (typeof n !== 'string' || n === '') throw invalidToken();
  return n;
}
