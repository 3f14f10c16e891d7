import { expect } from 'chai';
import { placeSession, PlacementLedger, type PlacementHost } from '../../controller/hosts/placement.js';
import type { ResolvedProvider } from '../../controller/providers/provider-spec.js';
import { actionsOf, agentFacts, planAt, sessionFacts } from './tick-fixtures.js';

const local: PlacementHost = { name: 'local', state: 'up', slots: null, used: 0, labels: [] };
function host(name: string, over: Partial<PlacementHost> = {}): PlacementHost {
  return { name, state: 'up', slots: 2, used: 0, labels: [], tmux: true, ...over };
}

describe('placement', function () {
  it('without a hosts list, a session runs here', function () {
    expect(placeSession({ tmux: false }, [local, host('h1')], new PlacementLedger())).to.deep.equal({ host: 'local' });
    expect(placeSession({ hosts: [], tmux: true }, [], new PlacementLedger())).to.deep.equal({ host: 'local' });
  });

  it('takes the least used host (sessions over slots), ties in the list’s order, counting this run’s placements', function () {
    const hosts = [local, host('h1', { slots: 2, used: 1 }), host('h2', { slots: 4, used: 1 }), host('h3')];
    const ledger = new PlacementLedger();
    const picks = Array.from({ length: 6 }, () =>
      placeSession({ hosts: ['h1', 'h2', 'h3'], tmux: false }, hosts, ledger),
    );
    // h3 0/2, then h2 1/4, h3 1/2 ties h1 1/2 (h1 first in the list), …; the last slots of h1 and h3 are taken once each.
    expect(picks).to.deep.equal([
      { host: 'h3' },
      { host: 'h2' },
      { host: 'h1' },
      { host: 'h2' },
      { host: 'h3' },
      { host: 'h2' },
    ]);
    const full = placeSession({ hosts: ['h1', 'h3'], tmux: false }, hosts, ledger);
    expect(full).to.deep.equal({
      reason:
        'no host in its hosts = [h1, h3] can take a session: h1 has no free slot (2 of 2 used); h3 has no free slot (2 of 2 used)',
    });
  });

  it('a label names every host that has it; local takes its turn as one slot that is never full', function () {
    const hosts = [local, host('g1', { labels: ['gpu'] }), host('g2', { labels: ['gpu'], slots: 1 })];
    const ledger = new PlacementLedger();
    const picks = Array.from(
      { length: 5 },
      () => (placeSession({ hosts: ['gpu', 'local'], tmux: false }, hosts, ledger) as { host: string }).host,
    );
    expect(picks).to.deep.equal(['g1', 'g2', 'local', 'g1', 'local']);
  });

  it('never places on a host down or not checked yet, and a tmux session only where tmux is', function () {
    const hosts = [
      local,
      host('h1', { state: 'down', last_error: 'Host key verification failed.' }),
      host('h2', { state: 'unknown' }),
      host('h3', { tmux: false }),
    ];
    expect(placeSession({ hosts: ['h1', 'h2', 'h3', 'fast'], tmux: true }, hosts, new PlacementLedger())).to.deep.equal(
      {
        reason:
          'no host in its hosts = [h1, h2, h3, fast] can take a session: h1 is down (Host key verification failed.); ' +
          "h2 is not checked yet; h3 has no tmux, which its provider's tmux runtime needs; fast names no host and no host's label",
      },
    );
    expect(placeSession({ hosts: ['h1', 'h3'], tmux: false }, hosts, new PlacementLedger())).to.deep.equal({
      host: 'h3',
    });
  });
});

describe('the tick places sessions', function () {
  const now = Date.parse('2026-12-01T12:00:00Z');
  const pool = (hosts: string[], over: { max?: number; tmux?: boolean } = {}) =>
    agentFacts(
      'w',
      { hosts, max_active_sessions: over.max ?? 3 },
      {
        min: over.max ?? 3,
        max: over.max ?? 3,
        ...(over.tmux ? { provider: { runtime: 'tmux' } as ResolvedProvider } : {}),
      },
    );

  it('starts each new session on a host of the agent’s list, two never on one last slot', function () {
    const plan = planAt(now, {
      agents: [pool(['h1', 'h2'])],
      hosts: [local, host('h1', { slots: 1 }), host('h2', { slots: 2 })],
    });
    expect(actionsOf(plan, 'start').map((a) => a.host)).to.deep.equal(['h1', 'h2', 'h2']);
    expect(plan.memory.unplaceable.get('w')).to.equal(undefined);
  });

  it('a session that cannot be placed is not started: the agent says why, and says it again once placed', function () {
    const hosts = [
      local,
      host('h1', { slots: 1 }),
      host('h2', { state: 'down', last_error: 'ssh: connect to host h2 port 22: No route to host' }),
    ];
    const plan = planAt(now, { agents: [pool(['h1', 'h2'])], hosts });
    expect(actionsOf(plan, 'start').map((a) => a.host)).to.deep.equal(['h1']);
    const reason =
      'no host in its hosts = [h1, h2] can take a session: h1 has no free slot (1 of 1 used); ' +
      'h2 is down (ssh: connect to host h2 port 22: No route to host)';
    expect(plan.memory.unplaceable.get('w')).to.equal(reason);
    expect(actionsOf(plan, 'wait')).to.deep.equal([
      { kind: 'wait', agent: 'w', reason: `cannot place a session: ${reason}` },
    ]);
    expect(plan.started).to.equal(1);
    expect(plan.deferred, 'not deferred: no later tick of the same facts could place it').to.equal(0);
    // h2 comes back: the rest are placed, and the agent no longer says it cannot be.
    const running = sessionFacts(now, 'w', { host: 'h1' });
    const next = planAt(now, {
      agents: [pool(['h1', 'h2'])],
      sessions: [running],
      hosts: [local, host('h1', { slots: 1, used: 1 }), host('h2')],
      memory: plan.memory,
    });
    expect(actionsOf(next, 'start').map((a) => a.host)).to.deep.equal(['h2', 'h2']);
    expect(next.memory.unplaceable.has('w')).to.equal(false);
  });

  it('a tmux agent is placed only where the check found tmux', function () {
    const plan = planAt(now, {
      agents: [pool(['h1', 'h2'], { max: 1, tmux: true })],
      hosts: [local, host('h1', { tmux: false }), host('h2')],
    });
    expect(actionsOf(plan, 'start').map((a) => a.host)).to.deep.equal(['h2']);
  });

  it('without hosts (no registry), every session starts here unplaced, as before', function () {
    const plan = planAt(now, { agents: [pool(['h1'], { max: 1 })] });
    expect(actionsOf(plan, 'start').map((a) => a.host)).to.deep.equal([undefined]);
  });

  it('a dormant session wakes only when its host is up with a free slot', function () {
    const asleep = sessionFacts(now, 'w', { host: 'h1', running: false, state: 'asleep', idle: false, ready: false });
    const agent = pool(['h1'], { max: 1 });
    const down = planAt(now, {
      agents: [agent],
      sessions: [asleep],
      hosts: [local, host('h1', { state: 'down', last_error: 'Connection refused' })],
    });
    expect(actionsOf(down, 'wake')).to.deep.equal([]);
    expect(down.waits.get('w')).to.equal(`${asleep.sessionName} waits for its host: h1 is down (Connection refused)`);
    const gone = planAt(now, { agents: [agent], sessions: [asleep], hosts: [local] });
    expect(gone.waits.get('w')).to.equal(
      `${asleep.sessionName} waits for its host: h1 is no longer configured ([[host]])`,
    );
    const up = planAt(now, { agents: [agent], sessions: [asleep], hosts: [local, host('h1')] });
    expect(actionsOf(up, 'wake').map((a) => a.sessionId)).to.deep.equal([asleep.id]);
  });

  it('a session that failed to start and never took a turn starts on another host when its own has no room', function () {
    const failed = (tookTurn: boolean) =>
      sessionFacts(now, 'w', {
        host: 'h1',
        running: false,
        state: 'failed-create',
        idle: false,
        ready: false,
        tookTurn,
      });
    const agent = pool(['h1', 'h2'], { max: 1 });
    const hosts = [local, host('h1', { slots: 1, used: 1 }), host('h2')];
    const fresh = failed(false);
    const moved = planAt(now, { agents: [agent], sessions: [fresh], hosts });
    expect(actionsOf(moved, 'wake').map((a) => [a.sessionId, a.host])).to.deep.equal([[fresh.id, 'h2']]);
    expect(actionsOf(moved, 'wake')[0].reason).to.match(/, on h2 \(h1: h1 has no free slot \(1 of 1 used\)\)$/);
    // One that worked there keeps its work there: it waits for its host.
    const worked = failed(true);
    const kept = planAt(now, { agents: [agent], sessions: [worked], hosts });
    expect(actionsOf(kept, 'wake')).to.deep.equal([]);
    expect(kept.waits.get('w')).to.equal(`${worked.sessionName} waits for its host: h1 has no free slot (1 of 1 used)`);
    // So does one asleep, and one with no other host to go to.
    const asleep = sessionFacts(now, 'w', {
      host: 'h1',
      running: false,
      state: 'asleep',
      idle: false,
      ready: false,
      tookTurn: false,
    });
    expect(actionsOf(planAt(now, { agents: [agent], sessions: [asleep], hosts }), 'wake')).to.deep.equal([]);
    const only = failed(false);
    const nowhere = planAt(now, { agents: [pool(['h1'], { max: 1 })], sessions: [only], hosts });
    expect(actionsOf(nowhere, 'wake')).to.deep.equal([]);
  });
});
