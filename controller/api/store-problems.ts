import type { Middleware } from 'koa';
import { problemOf } from '../beads/beads-service.js';

/**
 * The bead store refuses bad values itself (an empty title, an unknown type): whichever family reached it —
 * sessions and mail keep their records as beads — that refusal is the caller's mistake, a 422 (or a 404 for a
 * missing bead), never a 500. Routes that map store errors themselves are unaffected.
 */
export function storeProblems(): Middleware {
  return async (_ctx, next) => {
    try {
      await next();
    } catch (err) {
      throw problemOf(err);
    }
  };
}
