/** Who a request is from, as the supervisor's access gate established it (`GET /v0/whoami`). */
export interface WhoamiResponse {
  /**
   * What events and comments record as its actor, and what a comment's `author` is compared with to let its
   * author delete it: the local user's name, or `token:NAME`.
   */
  actor: string;
  /**
   * `user`: a local account the same-user rule lets in (or `allow_users`/`allow_groups` name); `token`: an API token;
   * `session`: the credential of a session running on a remote host, answered by that host's gateway.
   */
  kind: 'user' | 'token' | 'session';
  /** The account's or the token's name; a session's id. */
  name: string;
  /** A session credential: the session's name. */
  session_name?: string;
  /** A session credential: the one city it may use. */
  city?: string;
  /** A read-only token: every mutation is refused (403). */
  read_only: boolean;
  /** Came with a browser session cookie (from `ctl ui`'s one-time link) standing for the caller. */
  browser_session: boolean;
  /**
   * When the token stops being accepted; absent for a user, or a token that does not expire.
   * @format date-time
   */
  expires_at?: string;
}
