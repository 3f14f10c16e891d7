import type { Request as KoaRequest } from 'koa';
import { Controller, Get, Request, Route, Tags } from '@tsoa/runtime';
import type { WhoamiResponse } from '../../shared/dto/whoami.js';
import { actorOf, callerOf } from '../caller.js';
import type { SupervisorServices } from './ioc.js';

@Route('v0')
@Tags('Access')
export class WhoamiRoutes extends Controller {
  constructor(private readonly services: SupervisorServices) {
    super();
  }

  /**
   * Who this request is from, as the access gate let it in: the local user, or an API token (`token:NAME` in
   * events). `actor` is what the request's events and comments record as their author — so a client (the
   * dashboard) can tell which comments are the caller's own to delete. Read-only; a refused caller gets the
   * gate's 401 or 403 like any request.
   * @summary Who the request is from
   */
  @Get('whoami')
  public whoami(@Request() request: KoaRequest): WhoamiResponse {
    // Every route but the code exchange and webhook deliveries runs with its caller attached.
    const caller = callerOf(request.req)!;
    const body: WhoamiResponse = {
      actor: actorOf(caller),
      kind: caller.kind,
      name: caller.name,
      read_only: caller.kind === 'token' && caller.readOnly,
      browser_session: caller.viaCookie === true,
    };
    if (caller.kind === 'token') {
      const expiresAt = this.services.tokens.list().find((t) => t.name === caller.name)?.expires_at;
      if (expiresAt) body.expires_at = expiresAt;
    }
    this.setHeader('Cache-Control', 'no-store');
    return body;
  }
}
