import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';

/** A request listener that loads its real one on first use, or when asked to (`load`, to warm up). */
export type LazyHandler = RequestListener & { load(): Promise<void> };

/**
 * A request listener that loads the real one on the first request. A process can listen before it loads its
 * HTTP stack (Koa, the router, the generated routes and their validator: about 20 MB of a controller's memory)
 * off the start-up path: a controller reports ready first, then loads it (`load`), so neither the city's start
 * nor its first request waits for it. Requests that arrive while it loads wait for it; their
 * bodies wait, unread, in their sockets.
 */
export function lazyHandler(load: () => Promise<RequestListener>): LazyHandler {
  let handler: RequestListener | undefined;
  let loading: Promise<RequestListener> | undefined;
  const start = () => (loading ??= load().then((loaded) => (handler = loaded)));
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    if (handler) {
      handler(req, res);
      return;
    }
    start().then(
      (loaded) => loaded(req, res),
      (err: unknown) => {
        // Nothing can answer as a problem without the stack that failed to load: a plain 500, and say why.
        res.writeHead(500, { 'Content-Type': 'text/plain', Connection: 'close' });
        res.end(`internal: the HTTP application failed to load: ${(err as Error).message}\n`);
      },
    );
  };
  return Object.assign(listener, { load: async () => void (await start()) });
}
