import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { pino } from 'pino';
import { localHost } from '../../controller/hosts/local-host.js';
import { resolveAgents } from '../../controller/agent-catalog/agent-catalog.js';
import {
  effectiveOptions,
  optionProblems,
  optionsSchemaView,
  requestedOptions,
} from '../../controller/providers/provider-options.js';
import type { ResolvedProvider } from '../../controller/providers/provider-spec.js';
import { resolveCityProviders, resolveProviders } from '../../controller/providers/resolve.js';
import { launchArgs, programArgs } from '../../controller/sessions/pipe/pipe-runtime.js';
import { StreamJsonProtocol } from '../../controller/sessions/protocols/stream-json.js';
import type { RuntimeOptions, RuntimeSink } from '../../controller/sessions/runtime.js';
import { contextPct, turnContext, withTurnUsage } from '../../controller/usage/context-usage.js';
import { parseCityConfig } from '../../shared/config/city-config.js';
import { Problem } from '../../shared/http/problem.js';
import { packageRoot } from '../../shared/paths.js';

const logger = pino({ level: 'silent' });

function providers(city: Record<string, Record<string, unknown>> = {}): Map<string, ResolvedProvider> {
  const { resolved, errors } = resolveCityProviders(city, {}, 'city.toml');
  expect([...errors.values()].map((e) => e.message)).to.deep.equal([]);
  return resolved;
}

function runtimeOptions(provider: ResolvedProvider, options: Record<string, string>): RuntimeOptions {
  return {
    sessionId: 's-1',
    provider,
    host: localHost,
    workDir: '/w',
    env: {},
    stateDir: '/s',
    options,
    startTimeoutMs: 1000,
    logger,
  };
}

describe('provider options: preset data to command-line flags', () => {
  it("claude: model, effort and max_turns become Claude Code's --model, --effort and --max-turns", () => {
    const claude = providers().get('claude')!;
    const args = programArgs(claude, runtimeOptions(claude, { max_turns: '3', model: 'sonnet', effort: 'high' }));
    // In the order the preset lists them, after its own arguments and the permission mode's.
    expect(args.slice(claude.args.length)).to.deep.equal([
      '--permission-mode',
      'default',
      '--model',
      'sonnet',
      '--effort',
      'high',
      '--max-turns',
      '3',
    ]);
  });

  it("codex: model and effort become -m and a model_reasoning_effort override, on every turn's exec", () => {
    const codex = providers().get('codex')!;
    expect(launchArgs(codex, runtimeOptions(codex, { effort: 'xhigh', model: 'gpt-5.5' }))).to.deep.equal([
      '-m',
      'gpt-5.5',
      '-c',
      'model_reasoning_effort="xhigh"',
    ]);
  });

  it("a provider's option_defaults in city.toml adjust the preset: its sessions start with them", () => {
    const claude = providers({ claude: { option_defaults: { model: 'opus', effort: 'low' } } }).get('claude')!;
    const args = launchArgs(
      claude,
      runtimeOptions(claude, effectiveOptions(claude.option_defaults, { effort: 'max' })),
    );
    expect(args).to.deep.equal(['--permission-mode', 'default', '--model', 'opus', '--effort', 'max']);
    // A provider based on it inherits them, and its own win key by key.
    const mine = providers({
      claude: { option_defaults: { model: 'opus' } },
      mine: { base: 'claude', option_defaults: { effort: 'high' } },
    }).get('mine')!;
    expect(mine.option_defaults).to.deep.equal({ model: 'opus', effort: 'high' });
    expect(Object.keys(mine.options_schema)).to.deep.equal(['model', 'effort', 'max_turns']);
  });

  it('option_defaults.permission_mode is the mode sessions start in', () => {
    const codex = providers({ codex: { option_defaults: { permission_mode: 'read-only' } } }).get('codex')!;
    expect(codex.default_permission_mode).to.equal('read-only');
    expect(launchArgs(codex, runtimeOptions(codex, {}))).to.deep.equal(['-c', 'sandbox_mode="read-only"']);
  });

  it('an option_defaults key the provider does not offer, or a value it does not take, is a config error naming it', () => {
    const cases: [Record<string, Record<string, unknown>>, string, RegExp][] = [
      [
        { codex: { option_defaults: { max_turns: '5' } } },
        'codex',
        /option_defaults\.max_turns: .*no option max_turns/,
      ],
      [
        { claude: { option_defaults: { effort: 'huge' } } },
        'claude',
        /option_defaults\.effort: .*"huge" is not one of/,
      ],
      [{ claude: { option_defaults: { max_turns: 'many' } } }, 'claude', /option_defaults\.max_turns: .*whole number/],
      [
        { plain: { command: 'cat', option_defaults: { model: 'x' } } },
        'plain',
        /plain has no option model \(it has none\)/,
      ],
      [
        { claude: { option_defaults: { permission_mode: 'yolo' } } },
        'claude',
        /permission_mode "yolo" is not one of claude's permission modes/,
      ],
    ];
    for (const [city, name, message] of cases) {
      const { errors } = resolveCityProviders(city, {}, 'city.toml');
      expect(errors.get(name)?.message, JSON.stringify(city)).to.match(message);
      expect(errors.get(name)?.message).to.match(/^city\.toml: providers\./);
    }
  });

  it('options are checked key by key: what the provider offers passes, the rest is named', () => {
    const claude = providers().get('claude')!;
    expect(
      optionProblems(claude, { model: 'sonnet', effort: 'max', max_turns: '10', permission_mode: 'plan' }),
    ).to.deep.equal([]);
    expect(optionProblems(claude, { temperature: '0.2', model: 'a\nb' }).map((p) => p.key)).to.deep.equal([
      'temperature',
      'model',
    ]);
    expect(optionProblems(claude, { temperature: '0.2' })[0].message).to.equal(
      'provider claude has no option temperature (it has model, effort, max_turns, permission_mode)',
    );
  });

  it('a request with an option the provider does not offer is a 422 naming it at body.options.<key>', () => {
    const codex = providers().get('codex')!;
    try {
      requestedOptions(codex, { model: 'gpt-5.5', max_turns: '3' }, undefined);
      expect.fail('accepted');
    } catch (err) {
      expect(err).to.be.instanceOf(Problem);
      const problem = err as Problem;
      expect(problem.status).to.equal(422);
      expect(problem.detail).to.contain('no option max_turns');
      expect(problem.errors).to.deep.equal([
        {
          location: 'body.options.max_turns',
          message: 'provider codex has no option max_turns (it has model, effort, permission_mode)',
          value: '3',
        },
      ]);
    }
    // The permission mode among them is set apart (the session's own), and must agree with permission_mode.
    expect(requestedOptions(codex, { model: 'm', permission_mode: 'read-only' }, undefined)).to.deep.equal({
      options: { model: 'm' },
      permissionMode: 'read-only',
    });
    expect(() => requestedOptions(codex, { permission_mode: 'read-only' }, 'default')).to.throw(Problem, /disagree/);
  });

  it('the public schema lists every option with its choices and default, never its flags', () => {
    const claude = providers({ claude: { option_defaults: { effort: 'high' } } }).get('claude')!;
    const schema = optionsSchemaView(claude);
    expect(schema.map((o) => o.key)).to.deep.equal(['model', 'effort', 'max_turns', 'permission_mode']);
    expect(schema[1]).to.deep.include({ key: 'effort', type: 'select', default: 'high' });
    expect(schema[1].choices.map((c) => c.value)).to.deep.equal(['low', 'medium', 'high', 'xhigh', 'max']);
    expect(JSON.stringify(schema)).not.to.contain('--');
  });

  it('an agent whose option_defaults its provider does not offer is unavailable, saying which', () => {
    const config = parseCityConfig(
      '[[agent]]\nname = "a"\nprovider = "codex"\noption_defaults = { max_turns = "4" }\n' +
        '[[agent]]\nname = "b"\nprovider = "claude"\noption_defaults = { model = "opus", effort = "low" }\n',
      'city.toml',
    );
    const resolved = resolveProviders({}, {}, 'city.toml');
    const [a, b] = resolveAgents('/city', config, config.agents, (n) => resolved.get(n), undefined);
    expect(a.available).to.equal(false);
    expect(a.unavailableReason).to.equal(
      'its option_defaults.max_turns: provider codex has no option max_turns (it has model, effort, permission_mode)',
    );
    expect(b.available).to.equal(true);
    // Its sessions start again when its options change.
    const changed = parseCityConfig(
      '[[agent]]\nname = "b"\nprovider = "claude"\noption_defaults = { model = "opus", effort = "high" }\n',
      'city.toml',
    );
    const [b2] = resolveAgents('/city', changed, changed.agents, (n) => resolved.get(n), undefined);
    expect(b2.fingerprint).not.to.equal(b.fingerprint);
  });
});

describe("a session's context: tokens of the last turn against the model's window", () => {
  const none = { windows: {} };

  it("Anthropic's usage counts cache reads and writes on top of input; OpenAI's input holds the cached", () => {
    expect(
      turnContext(
        { usage: { input_tokens: 100, cache_read_input_tokens: 5000, cache_creation_input_tokens: 900 } },
        none,
      ).tokens,
    ).to.equal(6000);
    expect(
      turnContext({ usage: { input_tokens: 7000, cached_input_tokens: 6000, output_tokens: 50 } }, none).tokens,
    ).to.equal(7000);
    // ACP's usage_update says both: tokens used of the window's size.
    expect(turnContext({ usage: { used: 53_000, size: 200_000 } }, none)).to.deep.equal({
      tokens: 53_000,
      window: 200_000,
    });
  });

  it("what a protocol knows better wins; the window comes from the provider's table by model otherwise", () => {
    const chosen = { model: 'gpt-5.5', windows: { 'gpt-5.5': 272_000 } };
    expect(turnContext({ usage: { input_tokens: 136_000, cached_input_tokens: 0 } }, chosen)).to.deep.equal({
      model: 'gpt-5.5',
      tokens: 136_000,
      window: 272_000,
    });
    expect(
      turnContext({ model: 'opus', context_tokens: 10, context_window: 1000, usage: { input_tokens: 99 } }, chosen),
    ).to.deep.equal({ model: 'opus', tokens: 10, window: 1000 });
    expect(contextPct(136_000, 272_000)).to.equal(50);
    expect(contextPct(1, 1000)).to.equal(0);
    expect(contextPct(10, undefined)).to.equal(undefined);
  });

  it('token totals add up turn by turn; the context is the last turn’s', () => {
    const chosen = { windows: {} };
    let usage = withTurnUsage(
      undefined,
      {
        usage: { input_tokens: 10, output_tokens: 3 },
        total_cost_usd: 0.5,
        context_tokens: 10,
        context_window: 1000,
        model: 'm',
      },
      chosen,
    );
    usage = withTurnUsage(
      usage,
      {
        usage: { input_tokens: 20, output_tokens: 4, cache_read_input_tokens: 80 },
        total_cost_usd: 0.25,
        context_tokens: 100,
        context_window: 1000,
      },
      chosen,
    );
    expect(usage).to.deep.equal({
      turns: 2,
      input_tokens: 30,
      output_tokens: 7,
      cache_read_tokens: 80,
      cache_creation_tokens: 0,
      cost_usd: 0.75,
      model: 'm',
      context_tokens: 100,
      context_window: 1000,
    });
    // A failed turn that reported nothing changes nothing.
    expect(withTurnUsage(usage, { subtype: 'error' }, chosen)).to.equal(usage);
  });

  it("stream-json: the model and the last main model call's prompt, not the turn's sum nor a subagent's", () => {
    const lines = readFileSync(
      join(packageRoot, 'test', 'fixtures', 'claude-2.1.332-subagent-foreground.jsonl'),
      'utf8',
    )
      .split('\n')
      .filter((l) => l.trim() !== '');
    const ends: Record<string, unknown>[] = [];
    const sink = {
      ready: () => undefined,
      output: () => undefined,
      turnEnded: (data?: Record<string, unknown>) => ends.push(data ?? {}),
      turnBegan: () => undefined,
      subagent: () => undefined,
      pending: () => undefined,
      pendingCleared: () => undefined,
      sessionKey: () => undefined,
      resumeRefused: () => undefined,
      deliveryRetried: () => undefined,
      exited: () => undefined,
      behind: () => undefined,
    } satisfies RuntimeSink;
    const protocol = new StreamJsonProtocol({ ...providers().get('claude')!, ready_delay_ms: 0 }, sink, logger);
    protocol.started({ write: () => Promise.resolve(), signal: () => undefined });
    void protocol.deliver({ id: 'm1', text: 'delegate: run echo hi' });
    protocol.lines(lines);
    protocol.ended();
    expect(ends).to.have.length(1);
    // Its result says 20 input tokens over the turn's two main calls (40 with the subagent's): the context is the
    // last main call's 10, of claude-opus-5-5's 1,000,000.
    expect(ends[0]).to.deep.include({ model: 'claude-opus-5-5', context_tokens: 10, context_window: 1_000_000 });
    expect((ends[0].usage as { input_tokens: number }).input_tokens).to.equal(20);
  });
});
