import type { TurnFailureCategory } from '../../shared/dto/session-event-payloads.js';

/** A turn the provider's service failed, as the program reported it: its words, and its API's status if any. */
export interface TurnFailure {
  message: string;
  status?: number;
}

/**
 * What kind of failure a turn's is, for people and for the agents' restart policy: a rate limit or an
 * unreachable model is the provider's weather, not the program's fault (the reference counted such screens as
 * crashes and quarantined the agent). From the status when the program gave one, else from its words.
 */
export function categoryOf(failure: TurnFailure): TurnFailureCategory {
  const { status, message } = failure;
  if (status === 429 || /\brate.?limit|\b429\b|too many requests/i.test(message)) return 'rate_limited';
  if (status === 401 || status === 403 || /\b40[13]\b|unauthori[sz]ed|invalid (api )?key|not logged in/i.test(message))
    return 'auth';
  if (
    (status !== undefined && status >= 500) ||
    /\b5\d\d\b|overloaded|connection (error|refused)|ECONNREFUSED|unreachable|timed? ?out|fetch failed/i.test(message)
  )
    return 'provider_unavailable';
  return 'error';
}
