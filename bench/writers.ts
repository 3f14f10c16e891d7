import { fork, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { wallNow } from './sse.js';

const WRITER_SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'event-writer.mjs');

/** A log a writer appends to: by file (`mode: 'file'`) or by `POST /v0/city/{city}/events` (`mode: 'http'`). */
export interface WriteTarget {
  city: string;
  path: string;
  lockPath: string;
}

export interface RunSpec {
  /** Tags every event of this run (`payload.r`). */
  run: number;
  mode: 'file' | 'http';
  /** Supervisor base URL (http mode). */
  base?: string;
  ratePerTarget: number;
  durationMs: number;
  /** When the first events are due (wallNow() clock). */
  startAt: number;
  padBytes: number;
  /** Back to back, one in flight per target, instead of paced (a capacity probe). */
  closedLoop?: boolean;
}

/** [target index, i, sent, done]: when the writer handed the event to EventLog / sent the POST, and when that resolved (NaN: failed). */
export type WriterSample = [number, number, number, number];

export interface WriterResult {
  writer: number;
  targets: WriteTarget[];
  sent: number;
  failed: number;
  samples: WriterSample[];
}

interface WriterMessage {
  kind: string;
  run?: number;
  t?: number;
  now?: number;
  sent?: number;
  failed?: number;
  samples?: WriterSample[];
  message?: string;
}

/** Writer processes (bench/event-writer.mjs), each with its own targets. */
export class WriterPool {
  private constructor(
    private readonly children: ChildProcess[],
    readonly targets: WriteTarget[][],
  ) {}

  /** Starts one writer process per entry of `targets` and waits until all are ready. */
  static async start(targets: WriteTarget[][]): Promise<WriterPool> {
    const children = targets.map((_, writer) =>
      fork(WRITER_SCRIPT, [], {
        env: { ...process.env, BENCH_WRITER_ID: String(writer) },
        // Plain node, not this process's tsx loader.
        execArgv: [],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      }),
    );
    const pool = new WriterPool(children, targets);
    try {
      await Promise.all(children.map((child) => pool.next(child, 'ready', 15_000)));
    } catch (err) {
      pool.kill();
      throw err;
    }
    return pool;
  }

  get pids(): number[] {
    return this.children.map((c) => c.pid!);
  }

  /**
   * The writers' clocks against ours: for each, offset = writer clock − ours at the same instant, estimated
   * from the best of several IPC round trips (± half its round trip).
   */
  async clockOffsets(rounds = 20): Promise<{ offset: number; rtt: number }[]> {
    const out: { offset: number; rtt: number }[] = [];
    for (const child of this.children) {
      let best = { offset: NaN, rtt: Infinity };
      for (let i = 0; i < rounds; i++) {
        const t0 = wallNow();
        const reply = this.next(child, 'pong', 5000);
        child.send({ kind: 'ping', t: t0 });
        const msg = await reply;
        const t2 = wallNow();
        if (t2 - t0 < best.rtt) best = { offset: msg.now! - (t0 + t2) / 2, rtt: t2 - t0 };
      }
      out.push(best);
    }
    return out;
  }

  /** Runs one paced append run on every writer; resolves with each writer's report. */
  async run(spec: RunSpec): Promise<WriterResult[]> {
    const timeout = spec.startAt - wallNow() + spec.durationMs + 30_000;
    return Promise.all(
      this.children.map(async (child, writer) => {
        const done = this.next(child, 'done', timeout, spec.run);
        child.send({ kind: 'run', ...spec, targets: this.targets[writer] });
        const msg = await done;
        return {
          writer,
          targets: this.targets[writer],
          sent: msg.sent!,
          failed: msg.failed!,
          samples: msg.samples!,
        };
      }),
    );
  }

  /** Asks every writer to leave; kills the ones still there after a moment. */
  async stop(): Promise<void> {
    const exits = this.children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
        }),
    );
    for (const child of this.children) {
      if (child.connected) child.send({ kind: 'exit' });
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(exits), new Promise((resolve) => (timer = setTimeout(resolve, 2000)))]);
    clearTimeout(timer);
    this.kill();
  }

  kill(): void {
    for (const child of this.children) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  }

  /** The next message of `kind` (for `run`, when given) from a writer; rejects on an error report, exit or timeout. */
  private next(child: ChildProcess, kind: string, timeoutMs: number, run?: number): Promise<WriterMessage> {
    return new Promise((resolve, reject) => {
      const finish = (err: Error | undefined, msg?: WriterMessage) => {
        clearTimeout(timer);
        child.off('message', onMessage);
        child.off('exit', onExit);
        if (err) reject(err);
        else resolve(msg!);
      };
      const onMessage = (raw: unknown) => {
        const msg = raw as WriterMessage;
        if (msg.kind === 'error' && (run === undefined || msg.run === run)) {
          finish(new Error(`writer ${child.pid}: ${msg.message}`));
        } else if (msg.kind === kind && (run === undefined || msg.run === run)) {
          finish(undefined, msg);
        }
      };
      const onExit = (code: number | null, signal: string | null) =>
        finish(new Error(`writer ${child.pid} exited (${code ?? signal}) while we waited for '${kind}'`));
      const timer = setTimeout(
        () => finish(new Error(`writer ${child.pid}: no '${kind}' in ${timeoutMs} ms`)),
        timeoutMs,
      );
      child.on('message', onMessage);
      child.on('exit', onExit);
    });
  }
}
