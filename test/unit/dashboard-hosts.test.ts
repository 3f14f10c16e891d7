import { expect } from 'chai';
import {
  changesHosts,
  HOST_STATE_WORDS,
  hostBadge,
  rttText,
  slotsText,
  toolsText,
  withHost,
  type Host,
} from '../../ui/src/host-rows.js';

// What the dashboard's Hosts view and its session badges make of the API's hosts (issue 32, section 6): the words
// a person reads, a check's answer put in its row, the events the view reloads on, and a session's badge.

const host = (name: string, more: Partial<Host> = {}): Host => ({
  name,
  address: `ssh://ctl@${name}.example`,
  state: 'unknown',
  slots: 2,
  used: 0,
  labels: [],
  ...more,
});

describe('the dashboard’s hosts', () => {
  it('says slots used of the host’s slots, local without a limit', () => {
    expect(slotsText(host('build1', { used: 1, slots: 4 }))).to.equal('1 of 4');
    expect(slotsText(host('local', { used: 3, slots: null }))).to.equal('3 (no limit)');
  });

  it('says each state in words, unknown as not checked yet', () => {
    expect(HOST_STATE_WORDS).to.deep.equal({ up: 'up', down: 'down', unknown: 'not checked yet' });
  });

  it('says the round trip when a check measured one', () => {
    expect(rttText(host('a', { rtt_ms: 12 }))).to.equal('12 ms');
    expect(rttText(host('a', { rtt_ms: 0 }))).to.equal('0 ms');
    expect(rttText(host('a'))).to.equal('—');
  });

  it('says what a check found of git and tmux, and nothing of a host that never answered', () => {
    expect(toolsText(host('a', { git: true, tmux: true }))).to.equal('git, tmux');
    expect(toolsText(host('a', { git: true, tmux: false }))).to.equal('git, no tmux');
    expect(toolsText(host('a', { git: false }))).to.equal('no git');
    expect(toolsText(host('a'))).to.equal('—');
  });

  it('puts a check’s answer in its row, leaving the others and the order', () => {
    const list = [host('local', { state: 'up', slots: null }), host('b1'), host('b2')];
    const checked = host('b1', { state: 'down', last_error: 'ssh: refused', checked_at: '2026-12-02T15:00:00Z' });
    const after = withHost(list, checked)!;
    expect(after.map((h) => h.name)).to.deep.equal(['local', 'b1', 'b2']);
    expect(after[1]).to.equal(checked);
    expect(after[0]).to.equal(list[0]);
    expect(after[2]).to.equal(list[2]);
    // A host the list does not have yet is left for the reload its config.reloaded brings.
    expect(withHost(list, host('b3'))).to.deep.equal(list);
    expect(withHost(undefined, checked)).to.equal(undefined);
  });

  it('reloads on a host’s change of state, a session starting or ending, and a configuration reload', () => {
    for (const type of [
      'host.up',
      'host.down',
      'session.created',
      'session.woke',
      'session.stopped',
      'session.suspended',
      'session.crashed',
      'session.closed',
      'session.lost',
      'session.quarantined',
      'config.reloaded',
    ]) {
      expect(changesHosts(type), type).to.equal(true);
    }
    for (const type of ['session.message', 'session.pending', 'bead.created', 'host.upper', 'config.reload_failed']) {
      expect(changesHosts(type), type).to.equal(false);
    }
  });

  it('badges a session local, or with its remote host marked and said apart', () => {
    expect(hostBadge('local')).to.deep.equal({ text: 'local', remote: false });
    expect(hostBadge(undefined)).to.deep.equal({ text: 'local', remote: false });
    expect(hostBadge('build1')).to.deep.equal({ text: 'build1', remote: true, said: 'remote host' });
  });
});
