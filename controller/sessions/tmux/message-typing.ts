import { setTimeout as sleep } from 'node:timers/promises';
import { DeliveryFailed, type DeliveryRetry } from '../runtime.js';
import { inputLine } from './screen-reading.js';
import type { ScreenRules } from './screen-rules.js';

/** What typing a message needs of a terminal: its screen, and keys into it. */
export interface TypingPane {
  /** A name for errors (the tmux session). */
  readonly name: string;
  capture(): Promise<string[]>;
  /** Types text as it is (no key names). */
  type(text: string): Promise<unknown>;
  sendKeys(keys: string[]): Promise<unknown>;
}

/** How long typing waits, and how often it tries. */
export interface TypingTimes {
  /** How often the screen is read while waiting. */
  pollMs: number;
  /**
   * How long typed text has to show on its input line, and how long an input line has to show before anything
   * is typed: a loaded machine can take seconds to draw it.
   */
  echoWaitMs: number;
  /** How long each Enter gets to show that it submitted the message, and how many Enters an attempt presses. */
  submitWaitMs: number;
  enters: number;
  /** Attempts in all; the wait before the next one starts at `backoffMs` and doubles. */
  attempts: number;
  backoffMs: number;
}

export const TYPING_TIMES: TypingTimes = {
  pollMs: 50,
  echoWaitMs: 5000,
  submitWaitMs: 1000,
  enters: 3,
  attempts: 4,
  backoffMs: 1000,
};

/** What the runtime around it says and hears while a message is typed. */
export interface TypingHost {
  rules: ScreenRules;
  /** The program still runs (a program gone ends the typing with no retry: its exit fails the message). */
  running(): boolean;
  /** The program works (its status file, or its busy line): a message it shows that way was submitted. */
  busy(screen: string[]): boolean;
  /** Its hooks reported a prompt submitted since `since`. */
  hookSubmittedSince(since: number): boolean;
  /** The message is on its input line, drawn as `line`: from now a bare prompt means the program is done with it. */
  echoed(line: string): void;
  /** An attempt failed, and another follows after the back-off. */
  retrying(retry: DeliveryRetry): void;
}

/**
 * Types a message into a terminal program and submits it with Enter, trying again when the screen does not show
 * it (a loaded machine, a program that dropped the keys) — but never types it twice: each attempt first reads the
 * screen, types only what its input line lacks, and once an Enter has gone in only presses Enter again while the
 * message is still on the input line. Rejects with `DeliveryFailed` after the last attempt.
 */
export async function typeMessage(
  pane: TypingPane,
  message: string,
  host: TypingHost,
  times: TypingTimes = TYPING_TIMES,
): Promise<void> {
  const text = message.replace(/\r?\n/g, ' ');
  const typing = new Typing(pane, text, host, times);
  for (let attempt = 1; ; attempt++) {
    try {
      await typing.attempt();
      return;
    } catch (err) {
      if (!host.running()) throw err;
      const error = (err as Error).message;
      if (attempt >= times.attempts) {
        throw new DeliveryFailed(
          `could not deliver into ${pane.name} in ${attempt} attempt${attempt === 1 ? '' : 's'}: ${error}`,
          attempt,
        );
      }
      const retryInMs = times.backoffMs * 2 ** (attempt - 1);
      host.retrying({ attempt, attempts: times.attempts, error, retryInMs });
      await sleep(retryInMs);
      if (!host.running()) throw new Error('the program is not running', { cause: err });
    }
  }
}

/** One message's typing, across its attempts. */
class Typing {
  /** When the first keys went in: a prompt-submitted hook after that is about this message. */
  private readonly since = Date.now();
  /** An Enter went in: the program may have the message, so it is never typed again. */
  private entered = false;
  private readonly wanted: string;

  constructor(
    private readonly pane: TypingPane,
    private readonly text: string,
    private readonly host: TypingHost,
    private readonly times: TypingTimes,
  ) {
    this.wanted = text.trim();
  }

  async attempt(): Promise<void> {
    if (this.entered) {
      // After an Enter, a message no longer on its input line was submitted (the Enter only showed late).
      if (this.submitted(await this.pane.capture())) return;
    } else {
      await this.typeWhatIsMissing();
    }
    for (let enter = 1; enter <= this.times.enters; enter++) {
      await this.pane.sendKeys(['Enter']);
      this.entered = true;
      if (await this.until((screen) => this.submitted(screen), this.times.submitWaitMs)) return;
    }
    throw new Error(`typed but not submitted after ${this.times.enters} Enters`);
  }

  /** Types what its input line does not hold yet, and waits until the input line shows the whole message. */
  private async typeWhatIsMissing(): Promise<void> {
    let typed: string | undefined;
    // Nothing is typed where no input line shows: it would land in whatever the screen shows instead.
    await this.until((screen) => {
      typed = inputLine(screen, this.host.rules)?.typed;
      return typed !== undefined;
    }, this.times.echoWaitMs);
    if (typed === undefined) throw new Error('its input line is not on the screen');
    // A slow screen can show the last attempt's keys only now, or some of them: typing all of it again would
    // make it twice.
    if (!typed.endsWith(this.wanted)) {
      if (typed !== '' && !this.wanted.startsWith(typed)) {
        throw new Error(`its input line holds other text: ${typed.slice(0, 80)}`);
      }
      await this.pane.type(typed === '' ? this.text : this.wanted.slice(typed.length));
    }
    let echoed = '';
    const shown = await this.until((screen) => {
      const input = inputLine(screen, this.host.rules);
      echoed = input ? screen[input.index]!.trimEnd() : '';
      return input !== undefined && input.typed.endsWith(this.wanted);
    }, this.times.echoWaitMs);
    if (!shown) throw new Error('typed, but the text never showed on its input line');
    this.host.echoed(echoed);
  }

  /** The message shows as submitted: a hook said so, the program works, or its input line no longer holds it. */
  private submitted(screen: string[]): boolean {
    return (
      this.host.hookSubmittedSince(this.since) ||
      this.host.busy(screen) ||
      !(inputLine(screen, this.host.rules)?.typed.endsWith(this.wanted) ?? false)
    );
  }

  /** Whether the screen comes to satisfy `ok` within `waitMs`. */
  private async until(ok: (screen: string[]) => boolean, waitMs: number): Promise<boolean> {
    const deadline = Date.now() + waitMs;
    while (Date.now() < deadline) {
      if (ok(await this.pane.capture())) return true;
      await sleep(this.times.pollMs);
    }
    return false;
  }
}
