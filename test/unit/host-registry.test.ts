import { expect } from 'chai';
import pino from 'pino';
import type { HostEventPayload } from '../../shared/dto/hosts.js';
import type { HostConfig, HostProbe } from '../../controller/hosts/host-config.js';
import type { HostConnector } from '../../controller/hosts/host-connector.js';
import { HostRegistry } from '../../controller/hosts/host-registry.js';
import { waitUntil } from '../helpers/wait.js';

/** A connector whose checks answer what the test says, when it says (each check waits for its answer). */
class ScriptedConnector implements HostConnector {
  checks = 0;
  closed = false;
  private pending: ((probe: HostProbe | Error) => void)[] = [];
  constructor(readonly config: HostConfig) {}
  check(): Promise<HostProbe> {
    this.checks++;
    return new Promise((resolve, reject) => {
      this.pending.push((answer) => (answer instanceof Error ? reject(answer) : resolve(answer)));
    });
  }
  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
  get waiting(): number {
    return this.pending.length;
  }
  answer(probe: HostProbe | Error): void {
    const next = this.pending.shift();
    if (!next) throw new Error(`no check of ${this.config.name} is waiting`);
    next(probe);
  }
}

const UP: HostProbe = { ok: true, rtt_ms: 12.4, node_version: 'v24.1.0', ctl_version: '0.1.0', git: true, tmux: true };
const down = (error: string): HostProbe => ({ ok: false, git: false, tmux: false, error });

function hostConfig(name: string, more: Partial<HostConfig> = {}): HostConfig {
  return {
    name,
    address: `ssh://u@${name}.example`,
    user: 'u',
    hostname: `${name}.example`,
    port: 22,
    slots: 2,
    labels: [],
    work_root: '~/.ctl-work',
    ...more,
  };
}

describe('host registry', function () {
  let connectors: ScriptedConnector[];
  let events: { type: string; payload: HostEventPayload; message: string }[];
  let registry: HostRegistry<ScriptedConnector>;
  let used: Map<string, number>;
  let changes: number;
  const connectorOf = (name: string) => connectors.filter((c) => c.config.name === name).at(-1)!;
  const make = (checkTimeoutMs = 5_000) => {
    registry = new HostRegistry({
      connect: (config) => {
        const c = new ScriptedConnector(config);
        connectors.push(c);
        return c;
      },
      used: (name) => used.get(name) ?? 0,
      record: (type, payload, message) => {
        events.push({ type, payload, message });
        return Promise.resolve();
      },
      logger: pino({ level: 'silent' }),
      intervalMs: 60_000,
      checkTimeoutMs,
    });
    registry.onChange(() => changes++);
  };
  beforeEach(function () {
    connectors = [];
    events = [];
    used = new Map();
    changes = 0;
    make();
  });
  afterEach(async function () {
    await registry.stop();
  });

  it('lists local first, then each host unknown until its first check answers', async function () {
    used.set('local', 3).set('h1', 1);
    registry.reconcile([hostConfig('h1', { labels: ['gpu'], source: 'city.toml' })]);
    expect(registry.list()).to.deep.equal([
      { name: 'local', address: 'local', state: 'up', slots: null, used: 3, labels: [] },
      {
        name: 'h1',
        address: 'ssh://u@h1.example',
        state: 'unknown',
        slots: 2,
        used: 1,
        labels: ['gpu'],
        work_root: '~/.ctl-work',
        source: 'city.toml',
      },
    ]);
    expect(connectorOf('h1').checks, 'no check before start').to.equal(0);
    registry.start();
    connectorOf('h1').answer(UP);
    await waitUntil('h1 up', () => registry.status('h1')?.state === 'up');
    expect(registry.status('h1')).to.include({ rtt_ms: 12, node_version: 'v24.1.0', ctl_version: '0.1.0' });
    expect(registry.status('h1')).to.include({ git: true, tmux: true });
    expect(registry.status('h1')?.checked_at).to.be.a('string');
    expect(registry.status('h1')).not.to.have.property('last_error');
  });

  it('records host.up and host.down on changes of state only, the reason with a down', async function () {
    registry.reconcile([hostConfig('h1')]);
    registry.start();
    const h1 = connectorOf('h1');
    h1.answer(UP);
    await waitUntil('first event', () => events.length === 1);
    const again = registry.check('h1');
    h1.answer(UP);
    await again;
    const fails = registry.check('h1');
    h1.answer(down('ssh: connect to host h1.example port 22: Connection refused'));
    const failed = await fails;
    expect(failed?.last_error).to.equal('ssh: connect to host h1.example port 22: Connection refused');
    expect(failed, 'it never answered: its git and tmux are not known').not.to.have.property('git');
    const stillDown = registry.check('h1');
    h1.answer(down('ssh: connect to host h1.example port 22: Connection timed out'));
    expect((await stillDown)?.state).to.equal('down');
    const back = registry.check('h1');
    h1.answer(UP);
    expect((await back)?.state).to.equal('up');
    expect(events.map((e) => [e.type, e.payload.reason])).to.deep.equal([
      ['host.up', undefined],
      ['host.down', 'ssh: connect to host h1.example port 22: Connection refused'],
      ['host.up', undefined],
    ]);
    expect(events[1].message).to.equal('host h1 is down: ssh: connect to host h1.example port 22: Connection refused');
    expect(events[0].payload).to.deep.equal({ host: 'h1', address: 'ssh://u@h1.example', rtt_ms: 12 });
  });

  it('a check asked while one runs waits for it: one check, one answer for both', async function () {
    registry.reconcile([hostConfig('h1')]);
    const first = registry.check('h1');
    const second = registry.check('h1');
    expect(connectorOf('h1').checks).to.equal(1);
    connectorOf('h1').answer(UP);
    expect((await first)?.state).to.equal('up');
    expect((await second)?.state).to.equal('up');
  });

  it('a check that never answers makes the host down after the time-out; one that throws, with its error', async function () {
    make(50);
    registry.reconcile([hostConfig('h1'), hostConfig('h2')]);
    const hung = await registry.check('h1');
    expect(hung).to.include({ state: 'down', last_error: 'no answer to its check in 0.05 s' });
    const thrown = registry.check('h2');
    connectorOf('h2').answer(new Error('spawn ssh ENOENT'));
    expect(await thrown).to.include({ state: 'down', last_error: 'its check failed: spawn ssh ENOENT' });
  });

  it('follows the configuration: a host added is checked, one removed or reconnected has its connection closed', async function () {
    registry.reconcile([hostConfig('h1')]);
    registry.start();
    const old = connectorOf('h1');
    old.answer(UP);
    await waitUntil('h1 up', () => registry.status('h1')?.state === 'up');
    let before = changes;
    // Unchanged: nothing happens to it.
    registry.reconcile([hostConfig('h1')]);
    expect(connectors.length).to.equal(1);
    expect(changes).to.equal(before);
    // Its slots and labels alone: taken in place, its connection (and what runs over it) left alone.
    registry.reconcile([hostConfig('h1', { slots: 4, labels: ['big'] })]);
    expect(connectors.length).to.equal(1);
    expect(old.closed).to.equal(false);
    expect(registry.status('h1')).to.include({ state: 'up', slots: 4 });
    expect(registry.status('h1')?.labels).to.deep.equal(['big']);
    expect(changes).to.be.greaterThan(before);
    before = changes;
    // Its address: a new connection, unknown until checked; an added host listed first keeps the file's order.
    registry.reconcile([
      hostConfig('h2'),
      hostConfig('h1', { slots: 4, port: 2222, address: 'ssh://u@h1.example:2222' }),
    ]);
    expect(changes).to.be.greaterThan(before);
    expect(old.closed).to.equal(true);
    const renewed = connectorOf('h1');
    expect(renewed).not.to.equal(old);
    expect(registry.status('h1')).to.include({ state: 'unknown', slots: 4 });
    expect(registry.list().map((h) => h.name)).to.deep.equal(['local', 'h2', 'h1']);
    expect(renewed.waiting, 'the changed host is checked at once').to.equal(1);
    expect(connectorOf('h2').waiting, 'the added host is checked at once').to.equal(1);
    registry.reconcile([hostConfig('h2')]);
    expect(renewed.closed).to.equal(true);
    expect(registry.status('h1')).to.equal(undefined);
    expect(registry.has('h1')).to.equal(false);
    // The removed host's check answering late changes nothing and records nothing.
    renewed.answer(down('late'));
    connectorOf('h2').answer(UP);
    await waitUntil('h2 up', () => registry.status('h2')?.state === 'up');
    expect(events.map((e) => `${e.type} ${e.payload.host}`)).to.deep.equal(['host.up h1', 'host.up h2']);
  });

  it('a connector that loses its host makes it down at once, recorded; one no longer in use says nothing', async function () {
    registry.reconcile([hostConfig('h1')]);
    const checked = registry.check('h1');
    connectorOf('h1').answer(UP);
    await checked;
    const old = connectorOf('h1');
    registry.lost(old, 'the connection to h1 ended (its keep-alive went unanswered)');
    await waitUntil('host.down recorded', () => events.some((e) => e.type === 'host.down'));
    expect(registry.status('h1')).to.include({
      state: 'down',
      last_error: 'the connection to h1 ended (its keep-alive went unanswered)',
    });
    expect(registry.status('h1'), 'no round trip was measured: what it has is not claimed').not.to.have.property('git');
    registry.reconcile([hostConfig('h1', { identity_file: '/keys/other' })]);
    registry.lost(old, 'late');
    expect(registry.status('h1')).to.include({ state: 'unknown' });
    expect(events.map((e) => e.type)).to.deep.equal(['host.up', 'host.down']);
  });

  it('answers no such host as undefined, local as it is; stop closes every connection', async function () {
    registry.reconcile([hostConfig('h1'), hostConfig('h2')]);
    expect(await registry.check('nope')).to.equal(undefined);
    expect(await registry.check('local')).to.include({ name: 'local', state: 'up' });
    await registry.stop();
    expect(connectors.map((c) => c.closed)).to.deep.equal([true, true]);
    expect(registry.list().map((h) => h.name)).to.deep.equal(['local']);
  });
});
