import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { expectSuccess } from './helpers/cli.js';
import { createSession, deliver, startSessionCity, waitForTurn, type SessionCity } from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

interface Totals {
  invocations: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd_estimate: number;
  unpriced: number;
}
interface Usage {
  available: boolean;
  recording: boolean;
  source: string;
  today: Totals;
  all: Totals;
  recent: Totals;
  by_provider?: (Totals & { name: string })[];
  by_agent?: (Totals & { name: string })[];
  by_session?: (Totals & { name: string })[];
  recent_by_session?: { session: string; session_id: string; input_tokens: number }[];
  partial?: boolean;
  partial_reasons?: string[];
}

describe('usage (tokens and cost from what providers report)', function () {
  this.timeout(60_000);
  let city: SessionCity;

  before(async function () {
    // The shipped stream-json agent reports 10 input tokens and its reply's length as output tokens, cost 0; the
    // city prices its tokens at $3 (input) and $15 (output) per million, which wins over what it reports.
    city = await startSessionCity(
      'spend',
      '\n[[agent]]\nname = "talker"\nprovider = "pretend-claude"\nmin_active_sessions = 0\n' +
        '\n[[pricing]]\nprovider = "pretend-claude"\ninput = 3\noutput = 15\n',
    );
  });
  after(async () => city?.sup.cleanup());

  it('each turn of a stream-json session is counted by session, agent and provider; the CLI shows it', async function () {
    const { api } = city;
    const direct = await createSession(api, { name: 'pretend-claude' });
    await deliver(api, direct, 'hello');
    await waitForTurn(api, direct, 'assistant', 'You said: hello');
    const agentSession = await createSession(api, { kind: 'agent', name: 'talker' });
    await deliver(api, agentSession, 'hi there');
    await waitForTurn(api, agentSession, 'assistant', 'You said: hi there');
    const usage = await waitUntil('two turns counted', async () => {
      const reply = await api.get<Usage>('/usage');
      return reply.body.all.invocations === 2 ? reply.body : undefined;
    });
    expect(usage.all).to.include({
      input_tokens: 20,
      output_tokens: 'You said: hello'.length + 'You said: hi there'.length,
    });
    // (20 × $3 + 33 × $15) per million tokens.
    expect(usage.all).to.include({ cost_usd_estimate: 0.000555, unpriced: 0 });
    expect(usage).to.include({ available: true, recording: true, source: 'local_estimate' });
    expect(usage.today.invocations).to.equal(2);
    expect(usage.by_provider!.map((p) => [p.name, p.invocations])).to.deep.equal([['pretend-claude', 2]]);
    expect(usage.by_agent!.map((a) => [a.name, a.output_tokens])).to.deep.equal([
      ['talker', 'You said: hi there'.length],
    ]);
    expect(usage.recent_by_session!.map((s) => s.session_id).sort()).to.deep.equal([direct, agentSession].sort());
    const totalsOnly = await api.get<Usage>('/usage?aggregate_only=true');
    expect(totalsOnly.body.by_session).to.equal(undefined);
    expect(totalsOnly.body.all.invocations).to.equal(2);

    const out = expectSuccess(await city.sup.ctl(['usage', '--city', 'spend']));
    expect(out[0]).to.match(/^WINDOW\s+TURNS\s+INPUT\s+OUTPUT\s+CACHE READ\s+COST$/);
    expect(out.find((l) => l.startsWith('all'))).to.match(/^all\s+2\s+20\s+33\s+0\s+\$0\.0006$/);
    expect(out.some((l) => /^talker\s+1\s+10\s+18\s+0\s+\$0\.0003$/.test(l))).to.equal(true);
  });

  it('a malformed line in usage.jsonl is skipped and said', async function () {
    const path = join(city.dir, '.ctl', 'usage.jsonl');
    const before = readFileSync(path, 'utf8');
    appendFileSync(path, '{not json\n');
    const usage = (await city.api.get<Usage>('/usage')).body;
    expect(usage.all.invocations).to.equal(before.trim().split('\n').length);
    expect(usage.partial).to.equal(true);
    expect(usage.partial_reasons).to.deep.equal(['1 malformed line(s) of usage.jsonl skipped']);
  });
});
