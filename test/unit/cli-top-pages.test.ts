import { expect } from 'chai';
import type { AgentResponse } from '../../shared/dto/agents.js';
import type { Bead } from '../../shared/dto/beads.js';
import type { CityInfo } from '../../shared/dto/cities.js';
import type { SessionResponse } from '../../shared/dto/sessions.js';
import { pageOf, runOf } from '../../cli/top/actions.js';
import { hostCell, hostColumnWidth, isRemoteHost, sessionTail } from '../../cli/top/columns.js';
import { heldBeadOf, type CityView } from '../../cli/top/model.js';

// Which dashboard page `ctl top`'s o and r open for the selected row (the keys themselves: test/cli-top.test.ts).

const bead = (id: string, metadata: Record<string, string> = {}) => ({ id, metadata }) as unknown as Bead;
const agent = (name: string, active_bead?: string) => ({ name, active_bead }) as unknown as AgentResponse;
const session = (id: string, kind: string, template: string) => ({ id, kind, template }) as unknown as SessionResponse;

describe('ctl top pages', () => {
  it('opens a session, or an agent, at its own page', () => {
    expect(pageOf({ city: 'my town', session: session('mt-3', 'agent', 'w') })).to.equal(
      '/ui/city/my%20town/session/mt-3',
    );
    expect(pageOf({ city: 'town', agent: agent('rig/worker') })).to.equal('/ui/city/town/agent/rig%2Fworker');
  });

  it("finds the run of a step's bead, of a run's root, and none for other work", () => {
    expect(runOf(bead('t-9', { 'ctl.root_bead_id': 't-4', 'ctl.kind': 'step' }))).to.equal('t-4');
    expect(runOf(bead('t-4', { 'ctl.kind': 'workflow' }))).to.equal('t-4');
    expect(runOf(bead('t-2'))).to.equal(undefined);
  });

  it("takes an agent's active bead, for a session its agent's, and none for a plain session", () => {
    const cities: CityView[] = [
      {
        info: { name: 'town' } as CityInfo,
        agents: [agent('worker', 't-9'), agent('idle')],
        sessions: [],
        reviews: [],
        reviewsPending: 0,
      },
    ];
    expect(heldBeadOf(cities, { city: 'town', agent: cities[0].agents[0] })).to.equal('t-9');
    expect(heldBeadOf(cities, { city: 'town', session: session('t-1', 'agent', 'worker') })).to.equal('t-9');
    expect(heldBeadOf(cities, { city: 'town', session: session('t-2', 'agent', 'idle') })).to.equal(undefined);
    expect(heldBeadOf(cities, { city: 'town', session: session('t-3', 'provider', 'worker') })).to.equal(undefined);
  });
});

// What `ctl top`'s session lines say of hosts: the HOST column, and a lost session's reason (drawn on a real
// terminal: test/cli-top.test.ts).
describe('ctl top session lines: HOST column, lost sessions', () => {
  it('is as wide as the longest host (local at least), with its gap', () => {
    expect(hostColumnWidth(['local', 'local'], 100)).to.equal(6);
    expect(hostColumnWidth([], 100)).to.equal(6);
    expect(hostColumnWidth(['local', 'build1'], 100)).to.equal(7);
  });

  it('is cut at 12 characters, a cut name marked with an ellipsis', () => {
    const width = hostColumnWidth(['gpu-box-in-the-basement'], 120);
    expect(width).to.equal(13);
    expect(hostCell('gpu-box-in-the-basement', width)).to.equal('gpu-box-in-… ');
    expect(hostCell('gpu-box-in-t', width)).to.equal('gpu-box-in-t ');
    expect(hostCell('local', width)).to.equal('local'.padEnd(13));
  });

  it('is left out on a terminal narrower than 72 columns, where the output needs the room', () => {
    expect(hostColumnWidth(['build1'], 71)).to.equal(0);
    expect(hostColumnWidth(['build1'], 72)).to.equal(7);
  });

  it('marks every host but local remote', () => {
    expect(isRemoteHost('local')).to.equal(false);
    expect(isRemoteHost('build1')).to.equal(true);
  });

  it('ends a lost session’s line with why, a waiting one’s with what it asks, others with their output', () => {
    const base = { state: 'active' as const, title: 'a title', last_output: 'built\n  3 files' };
    expect(sessionTail(base)).to.deep.equal({ text: 'built 3 files', tone: 'output' });
    expect(sessionTail({ ...base, last_output: undefined })).to.deep.equal({ text: 'a title', tone: 'output' });
    const reason = 'its host build1 stopped answering: the connection to build1 ended';
    expect(sessionTail({ ...base, state: 'lost', reason })).to.deep.equal({ text: reason, tone: 'lost' });
    // A lost session without a reason (none recorded) shows what it last said, as any other.
    expect(sessionTail({ ...base, state: 'lost' }).tone).to.equal('output');
    const pending = { request_id: 'r1', kind: 'tool-approval', prompt: 'Allow Bash:\nls', created_at: '' };
    expect(sessionTail({ ...base, pending })).to.deep.equal({
      text: '? tool-approval: Allow Bash: ls',
      tone: 'asks',
    });
  });
});
