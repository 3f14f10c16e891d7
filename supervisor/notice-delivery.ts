import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, fetch } from 'undici';
import type { NotifyConfig } from '../shared/config/notify-config.js';
import { AddressRefused, checkHostAllowed, guardedLookup, type AddressPolicy } from '../shared/http/address-policy.js';
import { endProgram, programEnded, signalProgram, spawnProgram } from '../shared/program-scope.js';
import { findOnPath } from '../shared/readiness.js';
import type { Notice } from './notices.js';

// Taking a notice to where `[notify]` says: a webhook (POSTed JSON, each attempt bounded, retried) or a command
// (the notice as JSON on stdin, in its own process group, bounded). Each resolves with the attempts made, or
// rejects with a DeliveryFailure saying what went wrong last.

const RETRY_START_MS = 1_000;
const RETRY_MAX_MS = 30_000;
/** A command past its time-out gets SIGTERM, then SIGKILL this much later. */
const KILL_GRACE_MS = 2_000;
/** How much of a failing command's stderr is kept for the log and the event. */
const STDERR_TAIL = 2_000;

export class DeliveryFailure extends Error {
  constructor(
    message: string,
    readonly attempts: number,
  ) {
    super(message);
  }
}

/**
 * POSTs the notice; retries no answer, a 429 or a 5xx; any other non-2xx answer is final. A URL reaching this
 * machine's networks (private ranges, link-local, loopback) is refused unless `allow_private_networks`: checked
 * before the first attempt, and again on each address connected to.
 */
export async function postWebhook(
  webhook: NonNullable<NotifyConfig['webhook']>,
  notice: Notice,
  signal: AbortSignal,
): Promise<number> {
  const policy: AddressPolicy = { allowPrivateNetworks: webhook.allowPrivateNetworks, loopbackPrivate: true };
  const what = 'notify webhooks (notify.allow_private_networks = true allows them)';
  try {
    await checkHostAllowed(new URL(webhook.url).hostname, policy, what);
  } catch (err) {
    throw new DeliveryFailure((err as Error).message, 1);
  }
  const dispatcher = new Agent({ connect: { lookup: guardedLookup(policy, what) } });
  try {
    return await postWith(dispatcher, webhook, notice, signal);
  } finally {
    void dispatcher.close();
  }
}

async function postWith(
  dispatcher: Agent,
  webhook: NonNullable<NotifyConfig['webhook']>,
  notice: Notice,
  signal: AbortSignal,
): Promise<number> {
  const body = JSON.stringify(notice);
  let wait = RETRY_START_MS;
  for (let attempt = 1; ; attempt++) {
    let error: string;
    let retriable = true;
    try {
      const response = await fetch(webhook.url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'User-Agent': 'ctl-notify', ...webhook.headers },
        body,
        redirect: 'error',
        dispatcher,
        signal: AbortSignal.any([signal, AbortSignal.timeout(webhook.timeoutMs)]),
      });
      // The answer's body is not ours to read, but must be consumed for the connection to be reused.
      await response.body?.cancel();
      if (response.ok) return attempt;
      error = `HTTP ${response.status}`;
      retriable = response.status === 429 || response.status >= 500;
    } catch (err) {
      if (signal.aborted) throw new DeliveryFailure('the supervisor is stopping', attempt);
      const e = err as Error & { cause?: { code?: string; message?: string } };
      // An address the policy refuses (a name that now resolves elsewhere): no retry reaches it either.
      if (e.cause instanceof AddressRefused) throw new DeliveryFailure(e.cause.message, attempt);
      error =
        e.name === 'TimeoutError'
          ? `no answer within ${webhook.timeoutMs} ms`
          : (e.cause?.code ?? e.cause?.message ?? e.message);
    }
    if (!retriable || attempt > webhook.retries) throw new DeliveryFailure(error, attempt);
    try {
      await sleep(wait, undefined, { signal });
    } catch {
      throw new DeliveryFailure('the supervisor is stopping', attempt);
    }
    wait = Math.min(wait * 2, RETRY_MAX_MS);
  }
}

/**
 * Runs the command with the notice on stdin (and its kind and title in `CTL_NOTICE_KIND`, `CTL_NOTICE_TITLE`, for
 * a one-line shell command), in a process group and scope of its own (shared/program-scope.ts), ended with every
 * descendant past its time-out or when the supervisor stops, answered then whatever still holds its stderr. Where coreutils' `timeout` is installed it wraps the command, so the bound holds even if
 * the supervisor itself is killed meanwhile.
 */
export async function runCommand(
  command: NonNullable<NotifyConfig['command']>,
  notice: Notice,
  signal: AbortSignal,
): Promise<number> {
  const timeoutBin = findOnPath('timeout', process.env.PATH ?? '');
  const seconds = Math.ceil(command.timeoutMs / 1000);
  const argv = timeoutBin
    ? [timeoutBin, '-k', `${KILL_GRACE_MS / 1000}s`, `${command.timeoutMs / 1000}s`, ...command.argv]
    : command.argv;
  return new Promise((resolve, reject) => {
    const child = spawnProgram(argv[0]!, argv.slice(1), {
      stdio: ['pipe', 'ignore', 'pipe'],
      env: { ...process.env, CTL_NOTICE_KIND: notice.kind, CTL_NOTICE_TITLE: notice.title },
    });
    let stderr = '';
    let ended: string | undefined;
    const killGroup = (sig: NodeJS.Signals) => signalProgram(child, sig);
    const stop = (why: string) => {
      ended ??= why;
      killGroup('SIGTERM');
      setTimeout(() => killGroup('SIGKILL'), KILL_GRACE_MS).unref();
    };
    // Our own bound, a little after `timeout`'s, for where it is not installed (or fails to act).
    const timer = setTimeout(() => stop(`still running after ${seconds}s`), command.timeoutMs + (timeoutBin ? 500 : 0));
    const onAbort = () => stop('the supervisor is stopping');
    signal.addEventListener('abort', onAbort, { once: true });
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-STDERR_TAIL);
    });
    // A command that does not read its stdin (EPIPE) is its own business.
    child.stdin!.on('error', () => undefined);
    child.stdin!.end(`${JSON.stringify(notice)}\n`);
    child.once('error', (err) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      reject(new DeliveryFailure(`cannot run ${command.argv[0]}: ${err.message}`, 1));
    });
    void programEnded(child).then(({ code, signal: sig }) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      // What it started goes with it.
      endProgram(child);
      if (code === 0) return resolve(1);
      const timedOut = timeoutBin && (code === 124 || code === 137);
      const why =
        ended ??
        (timedOut ? `still running after ${seconds}s` : sig ? `ended by ${sig}` : `exited with status ${code}`);
      const tail = stderr.trim().split('\n').slice(-3).join(' | ');
      reject(new DeliveryFailure(tail ? `${why}: ${tail}` : why, 1));
    });
  });
}
