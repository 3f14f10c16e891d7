import { METHODS } from 'node:http';
import Router from '@koa/router';

/**
 * The router both processes register their routes on. Every method node:http parses counts as known to it, so
 * one no route takes on a path that exists (TRACE, PROPFIND, …) is a 405 with that path's `Allow`, as for
 * any other method, instead of @koa/router's 501 for methods outside its own short list.
 */
export function apiRouter(): Router {
  return new Router({ methods: [...METHODS] });
}
