/** An API token as `GET /v0/tokens` lists it: never its secret, which is shown once, at creation. */
export interface TokenInfo {
  /**
   * The token's name: what events record as `token:NAME`, and what `revoke` takes.
   * @pattern ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$
   */
  name: string;
  /** A read-only token is refused every mutation (403). */
  read_only: boolean;
  /** @format date-time */
  created_at: string;
  /**
   * When it stops being accepted; absent for a token that does not expire.
   * @format date-time
   */
  expires_at?: string;
  /** True once `expires_at` has passed (an expired token is refused with a 401 saying so). */
  expired: boolean;
  /** The local user who created it. */
  created_by: string;
}

export interface TokenListResponse {
  items: TokenInfo[];
  /** How many tokens there are in all. */
  total: number;
  /** Pass as `cursor` for the next page; absent on the last page. */
  next_cursor?: string;
}

export interface TokenCreateRequest {
  /**
   * A name for the token, unique among the supervisor's tokens.
   * @pattern ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$
   */
  name: string;
  /** Refuse every mutation made with it (default false). */
  read_only?: boolean;
  /** Lifetime, e.g. `30d`, `12h` (units ns … h and d); absent: it does not expire. */
  expires_in?: string;
}

/** A new token: `token` is its secret, returned this once and stored only as a hash. */
export interface TokenCreateResponse extends TokenInfo {
  /** Send it as `Authorization: Bearer <token>`. */
  token: string;
}

/** A one-time code that a browser exchanges for a session cookie. */
export interface AuthCodeResponse {
  /** The code: single-use, valid for `expires_at`. */
  code: string;
  /** The path to open in a browser (`/v0/auth/exchange?code=…`): it sets the cookie and redirects to `/ui/`. */
  url: string;
  /** @format date-time */
  expires_at: string;
}

/** Payload of `token.created` and `token.revoked` (in the supervisor's log; the actor is who did it). */
export interface TokenEventPayload {
  name: string;
  read_only: boolean;
  /** @format date-time */
  expires_at?: string;
}
