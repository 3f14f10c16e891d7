import { expect } from 'chai';
import { DeliveryFailed, type DeliveryRetry } from '../../controller/sessions/runtime.js';
import { typeMessage, type TypingPane, type TypingTimes } from '../../controller/sessions/tmux/message-typing.js';
import type { ScreenRules } from '../../controller/sessions/tmux/screen-rules.js';

const rules: ScreenRules = {
  source: 'test',
  prompt: /^❯ ?/m,
  promptLines: 1,
  busy: /esc to interrupt/m,
  interruptKeys: ['Escape'],
  dialogs: [],
};

/** Short waits: the same steps as in a session, in milliseconds. */
const times: TypingTimes = { pollMs: 2, echoWaitMs: 60, submitWaitMs: 30, enters: 2, attempts: 3, backoffMs: 10 };

/** How the fake terminal misbehaves. */
interface Misbehaviour {
  /** The first this many typings are lost (a program that dropped its keys). */
  dropTypings?: number;
  /** The first typing shows only once the attempt gave up on it (a loaded machine): `release()`. */
  lateEcho?: boolean;
  /** The first typing shows only this many characters. */
  partialEcho?: number;
  /** Enter submits only once the attempt gave up on it (a slow program): `release()`. */
  lateEnter?: boolean;
  /** What is on the input line to begin with. */
  input?: string;
  /** No input line at all (the program shows something else). */
  noPrompt?: boolean;
}

/** A terminal program drawn as `❯ <input>` under its history, which submits its input line on Enter. */
class FakePane implements TypingPane {
  readonly name = 'fake-pane';
  private readonly history = ['Welcome.'];
  private input: string;
  /** Every text typed into it, as typed. */
  readonly typings: string[] = [];
  /** Every line it was handed (what the program got). */
  readonly submitted: string[] = [];
  /** What it shows late, once released. */
  private held: (() => void)[] = [];

  constructor(private readonly misbehaviour: Misbehaviour = {}) {
    this.input = misbehaviour.input ?? '';
  }

  capture(): Promise<string[]> {
    return Promise.resolve(
      this.misbehaviour.noPrompt ? [...this.history, 'Loading…'] : [...this.history, `❯ ${this.input}`],
    );
  }

  type(text: string): Promise<void> {
    this.typings.push(text);
    const m = this.misbehaviour;
    if (m.dropTypings) m.dropTypings--;
    else if (m.lateEcho) {
      this.held.push(() => (this.input += text));
      delete m.lateEcho;
    } else if (m.partialEcho !== undefined) {
      this.input += text.slice(0, m.partialEcho);
      delete m.partialEcho;
    } else this.input += text;
    return Promise.resolve();
  }

  sendKeys(keys: string[]): Promise<void> {
    for (const key of keys) {
      if (key !== 'Enter') continue;
      const submit = () => {
        if (this.input === '') return;
        this.history.push(`❯ ${this.input}`);
        this.submitted.push(this.input);
        this.input = '';
      };
      if (this.misbehaviour.lateEnter) this.held.push(submit);
      else submit();
    }
    return Promise.resolve();
  }

  /** Shows what it held back: the keys arrive late, after the attempt that sent them gave up. */
  release(): void {
    this.held.splice(0).forEach((show) => show());
    delete this.misbehaviour.lateEnter;
  }
}

function host(retries: DeliveryRetry[], pane?: FakePane, running = () => true) {
  return {
    rules,
    running,
    busy: (screen: string[]) => rules.busy!.test(screen.join('\n')),
    hookSubmittedSince: () => false,
    echoed: () => undefined,
    retrying: (retry: DeliveryRetry) => {
      retries.push(retry);
      pane?.release();
    },
  };
}

describe('typing a message into a terminal program (tmux runtime)', function () {
  it('types it and submits it with Enter, with no retry when the screen shows both', async function () {
    const pane = new FakePane();
    const retries: DeliveryRetry[] = [];
    await typeMessage(pane, 'hello there', host(retries), times);
    expect(pane.submitted).to.deep.equal(['hello there']);
    expect(pane.typings).to.deep.equal(['hello there']);
    expect(retries).to.deep.equal([]);
  });

  it('types it again when its first typing was lost, after a back-off, and says so', async function () {
    const pane = new FakePane({ dropTypings: 1 });
    const retries: DeliveryRetry[] = [];
    await typeMessage(pane, 'hello there', host(retries), times);
    expect(pane.submitted).to.deep.equal(['hello there']);
    expect(pane.typings).to.deep.equal(['hello there', 'hello there']);
    expect(retries).to.have.length(1);
    expect(retries[0]).to.deep.include({ attempt: 1, attempts: 3, retryInMs: 10 });
    expect(retries[0].error).to.match(/never showed on its input line/);
  });

  it('does not type it twice when the first typing shows only after the wait: the retry presses Enter', async function () {
    const pane = new FakePane({ lateEcho: true });
    const retries: DeliveryRetry[] = [];
    await typeMessage(pane, 'hello there', host(retries, pane), times);
    expect(pane.typings).to.deep.equal(['hello there']);
    expect(pane.submitted).to.deep.equal(['hello there']);
    expect(retries).to.have.length(1);
  });

  it('types only what is missing when part of it showed', async function () {
    const pane = new FakePane({ partialEcho: 5 });
    await typeMessage(pane, 'hello there', host([]), times);
    expect(pane.typings).to.deep.equal(['hello there', ' there']);
    expect(pane.submitted).to.deep.equal(['hello there']);
  });

  it('once an Enter went in, never types it again: a late submit counts on the next attempt', async function () {
    const pane = new FakePane({ lateEnter: true });
    const retries: DeliveryRetry[] = [];
    await typeMessage(pane, 'hello there', host(retries, pane), times);
    expect(pane.typings).to.deep.equal(['hello there']);
    expect(pane.submitted).to.deep.equal(['hello there']);
    expect(retries).to.have.length(1);
    expect(retries[0].error).to.match(/not submitted after 2 Enters/);
  });

  it('gives up after its attempts with DeliveryFailed, backing off twice as long each time', async function () {
    const pane = new FakePane({ dropTypings: 99 });
    const retries: DeliveryRetry[] = [];
    const failure = await typeMessage(pane, 'into the void', host(retries), times).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).to.be.instanceOf(DeliveryFailed);
    expect((failure as DeliveryFailed).attempts).to.equal(3);
    expect((failure as Error).message).to.match(/^could not deliver into fake-pane in 3 attempts: typed, but/);
    expect(retries.map((r) => [r.attempt, r.retryInMs])).to.deep.equal([
      [1, 10],
      [2, 20],
    ]);
    expect(pane.submitted).to.deep.equal([]);
  });

  it('never types over other text on its input line, nor where no input line shows', async function () {
    const other = new FakePane({ input: 'a person typing' });
    const failure = await typeMessage(other, 'hello', host([]), times).catch((err: unknown) => err);
    expect((failure as Error).message).to.match(/its input line holds other text: a person typing$/);
    expect(other.typings).to.deep.equal([]);
    const noPrompt = new FakePane({ noPrompt: true });
    const none = await typeMessage(noPrompt, 'hello', host([]), times).catch((err: unknown) => err);
    expect(none).to.be.instanceOf(DeliveryFailed);
    expect((none as Error).message).to.match(/its input line is not on the screen$/);
    expect(noPrompt.typings).to.deep.equal([]);
  });

  it('stops at once when the program is gone (not a failed delivery: its exit fails the message)', async function () {
    const pane = new FakePane({ dropTypings: 99 });
    const retries: DeliveryRetry[] = [];
    let running = true;
    const failure = await typeMessage(
      pane,
      'hello',
      {
        ...host(retries, pane, () => running),
        retrying: (retry) => {
          retries.push(retry);
          running = false;
        },
      },
      times,
    ).catch((err: unknown) => err);
    expect(failure).to.be.instanceOf(Error).and.not.instanceOf(DeliveryFailed);
    expect(retries).to.have.length(1);
  });
});
