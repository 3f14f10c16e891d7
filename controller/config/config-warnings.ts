import { AsyncLocalStorage } from 'node:async_hooks';
import type { Middleware } from 'koa';

/** The response header naming a problem the configuration already had, one header line per problem. */
export const CONFIG_WARNING_HEADER = 'CTL-Config-Warning';

const current = new AsyncLocalStorage<string[]>();

/**
 * Gives each request a place for configuration warnings (`warnConfig`) and answers them as `CTL-Config-Warning`
 * headers: a write that went through beside a problem it did not make says so, whichever editor wrote.
 */
export function configWarnings(): Middleware {
  return (ctx, next) => {
    const warnings: string[] = [];
    return current.run(warnings, async () => {
      await next();
      // Header values are one line of Latin-1.
      if (warnings.length)
        ctx.set(
          CONFIG_WARNING_HEADER,
          warnings.map((w) => w.replace(/[^\x20-\x7e]/g, '?')),
        );
    });
  };
}

/** Names a problem of the configuration in the answer to the request being served (if any). */
export function warnConfig(message: string): void {
  current.getStore()?.push(message);
}
