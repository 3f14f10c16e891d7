import { expect } from 'chai';
import type { Logger } from 'pino';
import type { BeadsService } from '../../controller/beads/beads-service.js';
import type { Session } from '../../controller/sessions/session.js';
import type { SessionService } from '../../controller/sessions/session-service.js';
import type { EventLog } from '../../shared/events/event-log.js';
import { MailNotices } from '../../controller/agents/mail-notices.js';
import { applyTickPlan, type TickApplyHost } from '../../controller/agents/tick-apply.js';
import { emptyMemory, type TickAction, type TickPlan } from '../../controller/agents/tick-facts.js';
import { WorkBoard } from '../../controller/agents/work-board.js';
import { WorkHolding } from '../../controller/agents/work-holding.js';

interface Logged {
  fields: Record<string, unknown>;
  message: string;
}

/** A host whose every part fails the way a test says, and whose logger keeps what it was told. */
function host(parts: { sessions?: Partial<SessionService>; beads?: Partial<BeadsService> }): {
  host: TickApplyHost;
  warnings: Logged[];
} {
  const warnings: Logged[] = [];
  const logger = {
    warn: (fields: Record<string, unknown>, message: string) => warnings.push({ fields, message }),
  } as unknown as Logger;
  const beads = (parts.beads ?? {}) as BeadsService;
  return {
    warnings,
    host: {
      log: { append: () => Promise.resolve() } as unknown as EventLog,
      sessions: (parts.sessions ?? {}) as SessionService,
      logger,
      board: new WorkBoard(beads),
      holding: new WorkHolding(beads, logger),
      mail: new MailNotices(),
      forgive: () => {},
    },
  };
}

function planOf(actions: TickAction[]): TickPlan {
  return { actions, memory: emptyMemory(), waits: new Map(), started: 0, woke: 0, stopped: 0, deferred: 0 };
}

/** Lets promises set going (and their rejections) settle. */
const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('applying a tick plan (applyTickPlan)', () => {
  it('logs an action on a session that is gone, and goes on with the next', async () => {
    const slept: string[] = [];
    const session = {
      id: 's2',
      sleep: (reason: string) => (slept.push(reason), Promise.resolve()),
    } as unknown as Session;
    const { host: h, warnings } = host({
      sessions: { openById: (id: string) => (id === 's2' ? session : undefined) },
    });
    await applyTickPlan(
      planOf([
        { kind: 'wake', sessionId: 's1', reason: 'woken' },
        { kind: 'sleep', sessionId: 's2', reason: 'idle' },
      ]),
      h,
    );
    expect(warnings).to.have.length(1);
    expect(warnings[0].message).to.equal('tick could not wake');
    expect(warnings[0].fields).to.include({ session: 's1' });
    expect(String(warnings[0].fields.err)).to.match(/session s1 is no longer open/);
    expect(slept).to.deep.equal(['idle']);
  });

  it('logs a close that fails after it was set going (no failure is dropped)', async () => {
    const { host: h, warnings } = host({
      sessions: { close: () => Promise.reject(new Error('disk full')) },
    });
    await applyTickPlan(planOf([{ kind: 'close', sessionId: 's1' }]), h);
    await settled();
    expect(warnings.map((w) => [w.message, w.fields.session, String(w.fields.err)])).to.deep.equal([
      ['tick could not close', 's1', 'Error: disk full'],
    ]);
  });

  it('a bead that could not be reopened is not handed to another session, and both are logged', async () => {
    const bead = { id: 'b1', title: 'job', status: 'in_progress', metadata: {} } as never;
    const session = { id: 's2', record: { session_name: 'pool-s2' }, enqueue: () => 'm1' } as unknown as Session;
    const updates: string[] = [];
    const { host: h, warnings } = host({
      sessions: { openById: () => session },
      beads: {
        update: (id: string) => {
          updates.push(id);
          return Promise.reject(new Error('store locked'));
        },
      },
    });
    const counts = await applyTickPlan(
      planOf([
        { kind: 'reopen', bead, sessionId: 'gone', message: 'gone' },
        { kind: 'assign', sessionId: 's2', agent: 'pool', bead },
      ]),
      h,
    );
    expect(counts).to.deep.equal({ assigned: 0, released: 0 });
    expect(updates).to.deep.equal(['b1']);
    expect(warnings.map((w) => [w.message, w.fields.bead])).to.deep.equal([
      ['tick could not reopen', 'b1'],
      ['tick could not assign', 'b1'],
    ]);
  });
});
