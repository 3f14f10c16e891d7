import { existsSync, readFileSync, rmSync } from 'node:fs';

/**
 * A test's crash point, off unless `CTL_TEST_CRASH_MID_POUR` names a file: while that file exists and holds a
 * number N, the controller kills itself (SIGKILL, as `kill -9` would) right after the Nth bead it made pouring
 * runs for bond nodes, having removed the file so that the controller started after it goes on. It proves that
 * a pour cut short is finished once, never made twice (test/bond-pours.test.ts).
 */
export function pourCrashHook(env: NodeJS.ProcessEnv): (() => Promise<void>) | undefined {
  const file = env.CTL_TEST_CRASH_MID_POUR;
  if (!file) return undefined;
  let made = 0;
  return () => {
    made++;
    if (existsSync(file) && made >= Number(readFileSync(file, 'utf8').trim())) {
      rmSync(file, { force: true });
      process.kill(process.pid, 'SIGKILL');
    }
    return Promise.resolve();
  };
}
