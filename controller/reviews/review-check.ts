import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../../shared/atomic-write.js';
import { formatDuration } from '../../shared/duration.js';
import type { ReviewCheck } from '../../shared/dto/reviews.js';
import type { CommandRunner } from '../commands.js';

/** A check's output kept (file and detail): its last 64 KiB, where a failure says why. */
export const CHECK_OUTPUT_MAX = 64 * 1024;
/** What of it the agent is told when the check fails: the end, where test runners sum up. */
const TOLD_MAX = 4000;

export interface CheckRun {
  check: ReviewCheck;
  output: string;
  /** The controller is stopping: the check was killed by that, not failed (the next controller runs it again). */
  interrupted: boolean;
}

/**
 * The city's `[review] check` run in a review's tree before it lands: through the city's CommandRunner (its own
 * process group and cgroup, shared/program-scope.ts; at its time-out it is killed with every descendant), its
 * output's last 64 KiB kept in `<dir>/<bead>.check.log`.
 */
export async function runCheck(
  commands: CommandRunner,
  o: {
    command: string;
    timeoutMs: number;
    tree: string;
    commit: string;
    env: NodeJS.ProcessEnv;
    dir: string;
    bead: string;
  },
): Promise<CheckRun> {
  const result = await commands.run(o.command, {
    cwd: o.tree,
    env: o.env,
    timeoutMs: o.timeoutMs,
    outputMax: CHECK_OUTPUT_MAX,
  });
  const interrupted = commands.stopped && !result.timedOut;
  const check: ReviewCheck = {
    command: o.command,
    passed: result.exitCode === 0 && !result.timedOut,
    ...(result.exitCode !== null ? { exit_code: result.exitCode } : {}),
    timed_out: result.timedOut,
    duration_ms: result.durationMs,
    at: new Date().toISOString(),
    commit: o.commit,
    ...(result.error !== undefined ? { error: result.error } : {}),
  };
  if (!interrupted) writeFileAtomic(checkOutputFile(o.dir, o.bead), result.output);
  return { check, output: result.output, interrupted };
}

export function checkOutputFile(dir: string, bead: string): string {
  return join(dir, `${bead.replace(/[^A-Za-z0-9._-]/g, '_')}.check.log`);
}

/** The kept output of a review's last check, if it ran. */
export function keptOutput(dir: string, bead: string): string | undefined {
  try {
    return readFileSync(checkOutputFile(dir, bead), 'utf8');
  } catch {
    return undefined;
  }
}

/** How a check went, in words (`exit 1 after 2.3s`, `killed at its time-out of 10s (ran 10s)`). */
export function checkOutcome(check: ReviewCheck, timeoutMs?: number): string {
  const took = formatDuration(check.duration_ms);
  if (check.timed_out) {
    return `killed at its time-out${timeoutMs ? ` of ${formatDuration(timeoutMs)}` : ''} (ran ${took})`;
  }
  if (check.error !== undefined) return `it could not start: ${check.error}`;
  if (check.exit_code === undefined) return `killed after ${took}`;
  return `exit ${check.exit_code} after ${took}`;
}

/** What the agent is told when the check fails on its work: how, the output's end, and what to do. */
export function checkFailedMessage(
  review: { bead: string; branch: string; base: string },
  check: ReviewCheck,
  output: string,
  timeoutMs: number,
): string {
  const tail = output.length > TOLD_MAX ? `…${output.slice(-TOLD_MAX)}` : output;
  return [
    `The check of bead ${review.bead} failed before it could merge into ${review.base}: \`${check.command}\` ` +
      `(${checkOutcome(check, timeoutMs)}), run on your work rebased onto ${review.base}. The review is sent back.`,
    ...(tail.trim() === '' ? ['(it printed nothing)'] : ['Its output ends:', tail.replace(/\n$/, '')]),
    `Make it pass on your branch ${review.branch} in your worktree and commit; when done: ctl bead close ${review.bead}`,
  ].join('\n');
}
