import type { Bead } from '../../shared/dto/beads.js';
import type { EventLog } from '../../shared/events/event-log.js';
import type { BeadsService } from '../beads/beads-service.js';
import type { CommandRunner } from '../commands.js';
import * as K from './molecule-keys.js';
import { clip, closeNode } from './run-outcome.js';

/**
 * The nodes whose commands decide them: a check (its step's outcome, then its command: pass, another attempt, or a
 * failure) and a gate (a timer, or a condition command run every interval). Commands run in the background; the
 * run is looked at again (`schedule`) when one answers.
 */
export class NodeCommands {
  /** Commands in flight (checks and condition gates), by bead id and attempt; and their answers. */
  private readonly inFlight = new Set<string>();
  private readonly answers = new Map<string, { pass: boolean; output: string }>();

  constructor(
    private readonly deps: {
      beads: BeadsService;
      log: EventLog;
      commands: CommandRunner;
      cityRoot: string;
      env: NodeJS.ProcessEnv;
      now: () => number;
      /** Routed work appeared: the tick hands it out. */
      poke: () => void;
      /** Looks at a run again. */
      schedule: (rootId: string) => void;
    },
  ) {}

  /**
   * A check node whose step is closed: the step's outcome and the check's command decide. Answers `changed` when
   * it closed the check or reopened the step, `hard-fail` when the run fails, or nothing while a command runs.
   */
  async check(root: Bead, node: Bead, byId: Map<string, Bead>): Promise<'changed' | 'hard-fail' | undefined> {
    const meta = node.metadata ?? {};
    const checks = meta[K.CHECKS];
    const step = checks === undefined ? undefined : byId.get(checks);
    if (!step) return undefined;
    const attempt = Number(step.metadata?.[K.ATTEMPT] ?? '1');
    const retries = Number(meta[K.RETRY_MAX_ATTEMPTS] ?? '1');
    const checkAttempts = Number(meta[K.CHECK_MAX_ATTEMPTS] ?? '1');
    const maxAttempts = Math.max(retries, checkAttempts);
    let reason: string | undefined;
    if (step.metadata?.[K.OUTCOME] === 'fail') {
      reason = step.metadata?.[K.OUTCOME_REASON] ?? `attempt ${attempt} failed`;
    } else if (meta[K.CHECK_COMMAND]) {
      const key = `${node.id}#${attempt}`;
      const answer = this.answers.get(key);
      if (!answer) {
        this.runCheck(root, node, step, attempt, key);
        return undefined;
      }
      this.answers.delete(key);
      if (!answer.pass) reason = answer.output;
    }
    if (reason === undefined) {
      await closeNode(this.deps.beads, node, 'pass');
      return 'changed';
    }
    if (attempt < maxAttempts) {
      await this.deps.beads.update(step.id, {
        status: 'open',
        assignee: '',
        metadata: {
          [K.ATTEMPT]: String(attempt + 1),
          [K.OUTCOME]: '',
          [K.OUTCOME_REASON]: clip(reason),
          'ctl.assigned_session': '',
        },
      });
      await this.deps.log.append({
        type: 'molecule.step_retried',
        actor: 'ctl',
        subject: step.id,
        message: `attempt ${attempt + 1} of ${maxAttempts}: ${clip(reason, 200)}`,
        payload: {
          run_id: root.id,
          step: step.metadata?.[K.STEP_REF],
          bead_id: step.id,
          attempt: attempt + 1,
          reason: clip(reason),
        },
      });
      this.deps.poke();
      return 'changed';
    }
    await closeNode(this.deps.beads, node, 'fail', reason);
    await this.deps.log.append({
      type: 'molecule.step_failed',
      actor: 'ctl',
      subject: step.id,
      message: `${attempt} attempt(s): ${clip(reason, 200)}`,
      payload: { run_id: root.id, step: step.metadata?.[K.STEP_REF], bead_id: step.id, attempt, reason: clip(reason) },
    });
    return meta[K.ON_EXHAUSTED] === 'soft_fail' ? 'changed' : 'hard-fail';
  }

  private runCheck(root: Bead, node: Bead, step: Bead, attempt: number, key: string): void {
    if (this.inFlight.has(key)) return;
    this.inFlight.add(key);
    const meta = node.metadata ?? {};
    void this.deps.commands
      // check() runs it only when the node has a check command.
      .run(meta[K.CHECK_COMMAND]!, {
        cwd: this.deps.cityRoot,
        env: {
          ...this.deps.env,
          CTL_RUN_ID: root.id,
          CTL_BEAD_ID: step.id,
          CTL_STEP: step.metadata?.[K.STEP_REF] ?? '',
          CTL_ATTEMPT: String(attempt),
        },
        timeoutMs: Number(meta[K.CHECK_TIMEOUT_MS] ?? 60_000),
      })
      .then((result) => {
        this.inFlight.delete(key);
        const why = result.timedOut
          ? `check timed out after ${meta[K.CHECK_TIMEOUT_MS]} ms`
          : (result.error ?? `check exited with ${result.signal ?? `code ${result.exitCode}`}`);
        this.answers.set(key, {
          pass: result.exitCode === 0,
          output: result.exitCode === 0 ? '' : `${why}\n${result.output.trim()}`.trim(),
        });
        this.deps.schedule(root.id);
      });
  }

  /** A gate whose needs are closed: answers `opened`, the time to look again, or nothing (a person opens it). */
  async gate(root: Bead, gate: Bead): Promise<'opened' | number | undefined> {
    const meta = gate.metadata ?? {};
    const now = this.deps.now();
    let armed = Date.parse(meta[K.GATE_ARMED_AT] ?? '');
    if (Number.isNaN(armed)) {
      armed = now;
      await this.deps.beads.update(gate.id, { metadata: { [K.GATE_ARMED_AT]: new Date(now).toISOString() } });
    }
    if (meta[K.GATE_KIND] === 'timer') {
      const opens = armed + Number(meta[K.GATE_DURATION_MS] ?? 0);
      if (now < opens) return opens;
      await closeNode(this.deps.beads, gate, 'pass', 'timer elapsed');
      return 'opened';
    }
    if (meta[K.GATE_KIND] === 'condition') {
      const key = `${gate.id}#gate`;
      const answer = this.answers.get(key);
      if (answer?.pass) {
        this.answers.delete(key);
        await closeNode(this.deps.beads, gate, 'pass', 'condition met');
        return 'opened';
      }
      if (!this.inFlight.has(key)) {
        const interval = Number(meta[K.GATE_INTERVAL_MS] ?? 30_000);
        const last = (answer as { at?: number } | undefined)?.at;
        if (last === undefined || now - last >= interval) this.runGateCheck(root, gate, key);
        else return last + interval;
      }
      return undefined;
    }
    return undefined;
  }

  private runGateCheck(root: Bead, gate: Bead, key: string): void {
    this.inFlight.add(key);
    const meta = gate.metadata ?? {};
    void this.deps.commands
      // A condition gate always has one: formula validation refuses it without (formula-file.ts).
      .run(meta[K.GATE_CHECK]!, {
        cwd: this.deps.cityRoot,
        env: { ...this.deps.env, CTL_RUN_ID: root.id, CTL_BEAD_ID: gate.id },
        timeoutMs: Number(meta[K.GATE_TIMEOUT_MS] ?? 10_000),
      })
      .then((result) => {
        this.inFlight.delete(key);
        this.answers.set(
          key,
          Object.assign({ pass: result.exitCode === 0, output: result.output }, { at: this.deps.now() }),
        );
        this.deps.schedule(root.id);
      });
  }
}
