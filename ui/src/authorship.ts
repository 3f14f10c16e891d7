import type { components } from '../../shared/generated/api-types.js';

/** Who the page is signed in as, as `GET /v0/whoami` says. */
export type Whoami = components['schemas']['WhoamiResponse'];

/**
 * Whether the caller may delete what `author` wrote: only its author may (the API refuses anyone else, 403), and
 * never with a read-only token. The author is compared with `actor`, which is what the API records as the author.
 */
export function mayDelete(me: Whoami | undefined, author: string): boolean {
  return me !== undefined && !me.read_only && me.actor === author;
}
