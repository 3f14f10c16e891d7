/** Body of simple successful mutations. */
export interface OKResponseBody {
  /** Always `ok`. */
  status: string;
}

/** 202 body of an asynchronous supervisor operation (`POST /v0/city`, `POST /v0/city/{cityName}/unregister`). */
export interface AsyncAcceptedResponse {
  /**
   * Correlation id (`req-` + 24 hex). Watch `/v0/events` or `/v0/events/stream` for `request.result.city.create`,
   * `request.result.city.unregister` or `request.failed` whose `payload.request_id` equals it.
   */
  request_id: string;
  /**
   * Supervisor composite cursor (`name:seq` entries, comma-separated, sorted by name) captured before the operation
   * started. Pass it as `after_cursor` to receive the result without replaying older events.
   */
  event_cursor: string;
  /**
   * What was found while accepting it that will keep it from working as asked (a `start_command` whose program
   * is not installed): the operation goes on; each says what and why.
   */
  warnings?: string[];
}
