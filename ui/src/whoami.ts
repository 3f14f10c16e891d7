import { api, must } from './api.js';
import type { Whoami } from './authorship.js';

// Who the page is signed in as (`GET /v0/whoami`): the local user, or `token:NAME` — what the API records as the
// author of what the page writes. Asked once per page load (the caller cannot change without one: a new sign-in
// link loads the page again); a failed ask is forgotten, so the next one asks again.

let asked: Promise<Whoami> | undefined;

export function whoami(): Promise<Whoami> {
  asked ??= must(api.GET('/v0/whoami')).catch((err: unknown) => {
    asked = undefined;
    throw err;
  });
  return asked;
}
