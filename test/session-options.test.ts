// Models, efforts and options: what a session, its agent and its provider choose reaches the program as its flags
// (the claude preset over the stream-json example agent, which answers `argv` with its command line and reports,
// as Claude Code does, each model call's usage and its model's context window); what a provider does not offer
// is refused, naming it.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { expectProblem } from './helpers/city-api.js';
import { expectFailure, expectSuccess } from './helpers/cli.js';
import { createSession, deliver, startSessionCity, waitForTurn, type SessionCity } from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

interface View {
  id: string;
  model?: string;
  options?: Record<string, string>;
  permission_mode?: string;
  context_tokens?: number;
  context_window?: number;
  context_pct?: number;
  usage?: { turns: number; input_tokens: number; output_tokens: number };
}

const TALKER = `
[[agent]]
name = "talker"
provider = "pretend-claude"
min_active_sessions = 0
option_defaults = { model = "pretend-agent" }
`;

describe('session options: models, efforts, turn limits', function () {
  this.timeout(60_000);
  let city: SessionCity;

  before(async function () {
    city = await startSessionCity('options', TALKER);
  });
  after(async () => city?.sup.cleanup());

  const view = async (id: string): Promise<View> => (await city.api.get<View>(`/session/${id}`)).body;
  /** The program's command line, as the example agent tells it. */
  const argv = async (id: string): Promise<string[]> => {
    await deliver(city.api, id, 'argv');
    const turn = await waitForTurn(city.api, id, 'assistant', /^argv: /);
    return JSON.parse(turn.text.slice('argv: '.length)) as string[];
  };
  const flagValue = (args: string[], flag: string) => args[args.indexOf(flag) + 1];

  it("a session's options become its program's flags; its view reports the model, its tokens and context_pct", async function () {
    const { api } = city;
    const id = await createSession(api, {
      name: 'pretend-claude',
      options: { model: 'pretend-9', effort: 'high', max_turns: '3', permission_mode: 'plan' },
    });
    const args = await argv(id);
    expect(flagValue(args, '--model')).to.equal('pretend-9');
    expect(flagValue(args, '--effort')).to.equal('high');
    expect(flagValue(args, '--max-turns')).to.equal('3');
    expect(flagValue(args, '--permission-mode')).to.equal('plan');
    let shown = await waitUntil('the first turn counted', async () => {
      const v = await view(id);
      return v.usage?.turns === 1 ? v : undefined;
    });
    expect(shown.options).to.deep.equal({ model: 'pretend-9', effort: 'high', max_turns: '3' });
    expect(shown.permission_mode).to.equal('plan');
    // The model as the program named it; the context as its last model call read it, of the window it reported.
    expect(shown).to.include({ model: 'pretend-9', context_tokens: 10, context_window: 1000, context_pct: 1 });
    await deliver(api, id, 'hello');
    await waitForTurn(api, id, 'assistant', 'You said: hello');
    shown = await waitUntil('the second turn counted', async () => {
      const v = await view(id);
      return v.usage?.turns === 2 ? v : undefined;
    });
    expect(shown).to.include({ context_tokens: 100, context_window: 1000, context_pct: 10 });
    expect(shown.usage).to.deep.include({ turns: 2, input_tokens: 20 });
  });

  it('an option the provider does not offer, or a value it does not take: a 422 naming it, nothing created', async function () {
    const { api } = city;
    const before = (await api.get<{ total: number }>('/sessions?state=all')).body.total;
    let problem = expectProblem(
      await api.post('/sessions', { name: 'pretend-claude', options: { temperature: '0.2' } }),
      422,
      'validation-failed',
      { location: 'body.options.temperature' },
    );
    expect(problem.detail).to.contain('provider pretend-claude has no option temperature');
    problem = expectProblem(
      await api.post('/sessions', { name: 'pretend-claude', options: { effort: 'huge' } }),
      422,
      'validation-failed',
      { location: 'body.options.effort' },
    );
    expect(problem.detail).to.contain('"huge" is not one of');
    // A text provider offers none.
    expectProblem(await api.post('/sessions', { name: 'echo', options: { model: 'x' } }), 422, 'validation-failed', {
      location: 'body.options.model',
    });
    expect((await api.get<{ total: number }>('/sessions?state=all')).body.total).to.equal(before);
    // The CLI says which flag carried it.
    expectFailure(
      await city.sup.ctl(['session', 'new', 'pretend-claude', '--option', 'temperature=0.2', '--city', 'options']),
      'session new',
      /invalid --option: provider pretend-claude has no option temperature/,
    );
  });

  it("an agent's option_defaults reach its sessions and its view; the agents API refuses options its provider lacks", async function () {
    const { api } = city;
    const id = await createSession(api, { kind: 'agent', name: 'talker' });
    expect(flagValue(await argv(id), '--model')).to.equal('pretend-agent');
    const agent = await waitUntil('the agent view with its model and context', async () => {
      const a = (await api.get<{ model?: string; context_pct?: number; usage?: { turns: number } }>('/agent/talker'))
        .body;
      return a.context_pct !== undefined ? a : undefined;
    });
    expect(agent).to.deep.include({
      model: 'pretend-agent',
      context_pct: 1,
      option_defaults: { model: 'pretend-agent' },
    });
    expect(agent.usage?.turns).to.equal(1);

    expectProblem(
      await api.patch('/agent/talker', { option_defaults: { reasoning: 'deep' } }),
      422,
      'validation-failed',
      { location: 'body.option_defaults.reasoning' },
    );
    expectProblem(
      await api.post('/agents', { name: 'other', provider: 'codex', option_defaults: { max_turns: '2' } }),
      422,
      'validation-failed',
      { location: 'body.option_defaults.max_turns' },
    );
    expect(readFileSync(join(city.dir, 'city.toml'), 'utf8')).not.to.match(/reasoning|name = "other"/);
    // A change it takes is written to its table, merged key by key.
    expect((await api.patch('/agent/talker', { option_defaults: { effort: 'low' } })).status).to.equal(200);
    expect(readFileSync(join(city.dir, 'city.toml'), 'utf8')).to.match(
      /option_defaults = \{ model = "pretend-agent", effort = "low" \}/,
    );
  });

  it("a provider's option_defaults adjust it (ctl session new --model wins); a bad one in city.toml is a validate error naming it", async function () {
    const { api } = city;
    expect(
      (await api.patch('/provider/pretend-claude', { option_defaults: { model: 'pretend-city', effort: 'max' } }))
        .status,
    ).to.equal(200);
    const out = expectSuccess(
      await city.sup.ctl(['session', 'new', 'pretend-claude', '--model', 'pretend-cli', '--json', '--city', 'options']),
    );
    const created = JSON.parse(out.join('\n')) as View;
    expect(created.options).to.deep.equal({ model: 'pretend-cli', effort: 'max' });
    const args = await argv(created.id);
    expect(flagValue(args, '--model')).to.equal('pretend-cli');
    expect(flagValue(args, '--effort')).to.equal('max');
    expectProblem(
      await api.patch('/provider/pretend-claude', { option_defaults: { temperature: '1' } }),
      422,
      'validation-failed',
    );

    const file = join(city.dir, 'city.toml');
    writeFileSync(file, `${readFileSync(file, 'utf8')}\n[providers.codex]\noption_defaults = { max_turns = "9" }\n`);
    const errors = await waitUntil('the validate error', async () => {
      const v = await api.get<{ errors: { message: string }[] }>('/config/validate');
      return v.body.errors.some((e) => /option_defaults\.max_turns/.test(e.message)) ? v.body.errors : undefined;
    });
    expect(errors.map((e) => e.message).join('\n')).to.match(
      /providers\.codex: option_defaults\.max_turns: provider codex has no option max_turns/,
    );
  });
});
