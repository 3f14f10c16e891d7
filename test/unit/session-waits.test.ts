import { expect } from 'chai';
import type { BeadsService } from '../../controller/beads/beads-service.js';
import type { Session } from '../../controller/sessions/session.js';
import { SessionWaits } from '../../controller/waits/session-waits.js';
import type { Bead } from '../../shared/dto/beads.js';
import type { EventLog } from '../../shared/events/event-log.js';
import { Problem } from '../../shared/http/problem.js';

/** Beads in memory, closing listeners run as BeadsService runs them (after the change). */
function fakeBeads() {
  const beads = new Map<string, Bead>();
  const listeners: ((b: Bead) => Promise<void>)[] = [];
  let n = 0;
  const service = {
    find: (id: string) => beads.get(id),
    list: (q: { label?: string; includeClosed?: boolean }) => ({
      items: [...beads.values()]
        .filter((b) => (!q.label || b.labels?.includes(q.label)) && (q.includeClosed || b.status !== 'closed'))
        .reverse(),
    }),
    get: (id: string) => {
      const b = beads.get(id);
      if (!b) throw new Problem('bead-not-found', `not_found: bead not found: ${id}`);
      return b;
    },
    onClosed: (l: (b: Bead) => Promise<void>) => listeners.push(l),
    create: (input: {
      title: string;
      type?: string;
      labels?: string[];
      metadata?: Record<string, string>;
      description?: string;
    }) => {
      const bead = {
        id: `t-${++n}`,
        title: input.title,
        issue_type: input.type ?? 'task',
        status: 'open',
        labels: input.labels ?? [],
        metadata: input.metadata ?? {},
        description: input.description,
        created_at: new Date(n * 1000).toISOString(),
      } as Bead;
      beads.set(bead.id, bead);
      return Promise.resolve({ bead, replayed: false });
    },
    update: async (id: string, change: { status?: string; metadata?: Record<string, string> }) => {
      const before = beads.get(id)!;
      const after = {
        ...before,
        ...(change.status ? { status: change.status } : {}),
        metadata: { ...before.metadata, ...change.metadata },
      } as Bead;
      beads.set(id, after);
      if (after.status === 'closed' && before.status !== 'closed') for (const l of listeners) await l(after);
      return after;
    },
  };
  return {
    service: service as unknown as BeadsService,
    close: (id: string) => service.update(id, { status: 'closed' }),
    beads,
  };
}

describe('session waits (unit)', () => {
  const told: string[] = [];
  const types: string[] = [];
  const session = {
    id: 's-1',
    record: { session_name: 'desk-1' },
    enqueue: (text: string) => (told.push(text), `m-${told.length}`),
  } as unknown as Session;
  let open = true;
  const make = () => {
    const beads = fakeBeads();
    const waits = new SessionWaits({
      beads: beads.service,
      openSession: (name) => (open && (name === 's-1' || name === 'desk-1') ? session : undefined),
      log: { append: (e: { type: string }) => (types.push(e.type), Promise.resolve()) } as unknown as EventLog,
    });
    return { beads, waits };
  };
  beforeEach(() => {
    told.length = 0;
    types.length = 0;
    open = true;
  });

  it('all: nudges once, when the last bead closes', async () => {
    const { beads, waits } = make();
    const [a, b] = [
      (await beads.service.create({ title: 'a' })).bead,
      (await beads.service.create({ title: 'b' })).bead,
    ];
    const wait = await waits.register('desk-1', { on_beads: [a.id, b.id, a.id], note: 'go' });
    expect(wait.metadata).to.include({ dep_ids: `${a.id},${b.id}`, dep_mode: 'all', state: 'pending' });
    await beads.close(a.id);
    expect(told).to.deep.equal([]);
    await beads.close(b.id);
    expect(told).to.have.length(1);
    expect(told[0]).to.match(new RegExp(`^Wait ${wait.id} is over: ${a.id}, ${b.id} closed .* go$`));
    expect(waits.get(wait.id)!.metadata).to.include({ state: 'closed', nudge_id: 'm-1' });
    expect(types).to.deep.equal(['wait.registered', 'wait.ready']);
  });

  it('any: the first close nudges; later closes do not nudge again', async () => {
    const { beads, waits } = make();
    const [a, b] = [
      (await beads.service.create({ title: 'a' })).bead,
      (await beads.service.create({ title: 'b' })).bead,
    ];
    await waits.register('s-1', { on_beads: [a.id, b.id], any: true });
    await Promise.all([beads.close(a.id), beads.close(b.id)]);
    expect(told).to.have.length(1);
  });

  it('fails, without a message, when its session is gone by then; recheck ends waits met meanwhile', async () => {
    const { beads, waits } = make();
    const a = (await beads.service.create({ title: 'a' })).bead;
    const wait = await waits.register('s-1', { on_beads: [a.id] });
    open = false;
    await beads.close(a.id);
    expect(waits.get(wait.id)!.metadata).to.include({ state: 'failed' });
    expect(told).to.deep.equal([]);
    open = true;
    const b = (await beads.service.create({ title: 'b' })).bead;
    const later = await waits.register('s-1', { on_beads: [b.id] });
    beads.beads.set(b.id, { ...b, status: 'closed' }); // closed with no listener running (another controller's time)
    waits.recheckSoon();
    await new Promise((resolve) => setImmediate(resolve));
    expect(waits.get(later.id)!.metadata).to.include({ state: 'closed' });
  });

  it('refuses a closed session, an unknown bead, and no beads', async () => {
    const { waits } = make();
    open = false;
    await waits.register('s-1', { on_beads: ['x'] }).then(
      () => expect.fail('registered'),
      (err: Problem) => expect(err.code).to.equal('session-not-found'),
    );
    open = true;
    await waits.register('s-1', { on_beads: ['x'] }).then(
      () => expect.fail('registered'),
      (err: Problem) => expect(err.code).to.equal('bead-not-found'),
    );
    await waits.register('s-1', { on_beads: [' '] }).then(
      () => expect.fail('registered'),
      (err: Problem) => expect(err.status).to.equal(422),
    );
  });
});
