import { rmSync } from 'node:fs';
import { killAllMentioning } from '../test/helpers/processes.js';
import { tempDir } from '../test/helpers/supervisor.js';

/**
 * A benchmark's temporary root and the one cleanup every way out shares (the normal end, a failure, Ctrl-C or
 * SIGTERM): `stop` ends what the benchmark started, then, whatever happened, `finally` runs, every process
 * whose command line names the root is ended and the root removed. A signal cleans up and exits 130;
 * `interrupted` says whether one came (a failure it caused is not worth reporting).
 */
export function benchRoot(
  prefix: string,
  stop: () => Promise<void>,
  andFinally: () => void = () => undefined,
): { root: string; cleanup: () => Promise<void>; interrupted: () => boolean } {
  const root = tempDir(prefix);
  let cleaning: Promise<void> | undefined;
  const cleanup = () =>
    (cleaning ??= (async () => {
      try {
        await stop();
      } finally {
        andFinally();
        killAllMentioning(root);
        rmSync(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
        // After a normal end the handlers go; after a signal they stay, so a second one cannot cut us short.
        if (!interrupted) {
          process.off('SIGINT', onSignal);
          process.off('SIGTERM', onSignal);
        }
      }
    })());
  // Ctrl-C reaches us twice (from the terminal and relayed by tsx): the first starts the cleanup, later
  // ones must not kill us half-way through it.
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) return;
    interrupted = true;
    process.exitCode = 130;
    console.error(`\n${signal}: cleaning up`);
    cleanup()
      .catch((err: unknown) => console.error('cleanup failed:', err))
      .finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return { root, cleanup, interrupted: () => interrupted };
}
