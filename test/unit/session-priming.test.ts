import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { parseToml } from '../../shared/config/toml-syntax.js';
import type { ResolvedProvider } from '../../controller/providers/provider-spec.js';
import { parseProviderSpec, resolveProviders } from '../../controller/providers/resolve.js';
import { ConfigError } from '../../shared/config/config-error.js';
import { preparePriming, primingArgs } from '../../controller/sessions/priming.js';
import { ctlFirstOnPath, sessionEnvironment } from '../../controller/sessions/session-environment.js';
import type { SessionRecord } from '../../controller/sessions/session-store.js';

function preset(name: string): ResolvedProvider {
  return resolveProviders({}, {}, 'city.toml').get(name)!;
}

const record: SessionRecord = {
  id: 'alp-7',
  title: 'worker',
  state: 'active',
  template: 'worker',
  kind: 'agent',
  provider: 'claude',
  session_name: 'worker-7',
  work_dir: '/tmp',
  created_at: '2026-11-25T00:00:00Z',
};

describe("a session's environment and priming", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ctl-priming-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('puts the launcher first on PATH once, whatever PATH held', () => {
    expect(ctlFirstOnPath('/c/bin', '/usr/bin:/c/bin:/bin')).to.equal('/c/bin:/usr/bin:/bin');
    expect(ctlFirstOnPath('/c/bin', undefined)).to.equal('/c/bin');
  });

  it("names the agent and the bead held; a provider session's inherited CTL_AGENT and CTL_BEAD are dropped", () => {
    const place = { cityName: 'alpha', cityRoot: '/c', env: { CTL_AGENT: 'stale', CTL_BEAD: 'x-1' }, ctlBin: '/c/bin' };
    const env = sessionEnvironment(place, record, preset('claude'), { dir, bead: 'alp-3' });
    expect(env).to.include({ CTL_AGENT: 'worker', CTL_BEAD: 'alp-3', CTL_SESSION_ID: 'alp-7', CTL_CITY: 'alpha' });
    expect(env.PATH?.split(':')[0]).to.equal('/c/bin');
    const mine = sessionEnvironment(place, { ...record, kind: 'provider' }, preset('claude'), { dir });
    expect(mine).to.not.have.property('CTL_AGENT');
    expect(mine).to.not.have.property('CTL_BEAD');
  });

  it('Claude Code: the prompt as --append-system-prompt-file and hooks running ctl prime via --settings', () => {
    const priming = preparePriming(dir, preset('claude'), 'You are worker.', true, "/c/it's/bin");
    expect(primingArgs(preset('claude'), priming)).to.deep.equal([
      '--append-system-prompt-file',
      join(dir, 'system-prompt.md'),
      '--settings',
      join(dir, 'settings.json'),
    ]);
    expect(readFileSync(join(dir, 'system-prompt.md'), 'utf8')).to.equal('You are worker.');
    const settings = JSON.parse(readFileSync(join(dir, 'settings.json'), 'utf8')) as {
      hooks: Record<string, { hooks: { command: string }[] }[]>;
    };
    const prime = `'/c/it'\\''s/bin/ctl' prime`;
    expect(settings.hooks.SessionStart[0].hooks[0].command).to.equal(prime);
    expect(settings.hooks.PreCompact[0].hooks[0].command).to.equal(prime);
    // A provider's own session gets no hooks (nothing to prime it with).
    expect(preparePriming(dir, preset('claude'), undefined, false, '/c/bin')).to.deep.equal({});
  });

  it('Claude Code in tmux: every session gets hooks reporting its state with ctl hook-event, an agent also ctl prime', () => {
    const inTmux: ResolvedProvider = { ...preset('claude'), args: [], runtime: 'tmux', screen_rules: 'claude' };
    const read = () =>
      JSON.parse(readFileSync(join(dir, 'settings.json'), 'utf8')) as {
        hooks: Record<string, { hooks: { command: string; async?: boolean; timeout: number }[] }[]>;
      };
    // A provider's own session: the reporting hooks alone.
    expect(preparePriming(dir, inTmux, undefined, false, '/c/bin')).to.deep.equal({
      settingsFile: join(dir, 'settings.json'),
    });
    let settings = read();
    expect(Object.keys(settings.hooks).sort()).to.deep.equal([
      'Notification',
      'PermissionRequest',
      'PostToolUse',
      'PreToolUse',
      'SessionStart',
      'Stop',
      'StopFailure',
      'SubagentStop',
      'UserPromptSubmit',
    ]);
    expect(settings.hooks.Stop[0].hooks).to.deep.equal([
      { type: 'command', command: `'/c/bin/ctl' hook-event Stop`, timeout: 10 },
    ]);
    // One per tool call, and only a report: they do not hold the program.
    expect(settings.hooks.PreToolUse[0].hooks[0].async).to.equal(true);
    expect(settings.hooks.PermissionRequest[0].hooks[0].async).to.equal(undefined);
    // An agent's: primed too, both hooks of SessionStart in one list.
    preparePriming(dir, inTmux, 'You are worker.', true, '/c/bin');
    settings = read();
    expect(settings.hooks.SessionStart[0].hooks.map((h) => h.command)).to.deep.equal([
      `'/c/bin/ctl' prime`,
      `'/c/bin/ctl' hook-event SessionStart`,
    ]);
    expect(settings.hooks.PreCompact[0].hooks.map((h) => h.command)).to.deep.equal([`'/c/bin/ctl' prime`]);
  });

  it('Codex: the prompt as developer_instructions, a TOML string whatever it holds', () => {
    const prompt = 'Say "hi"\\n\tthen \u00e9 — and [stop]';
    const args = primingArgs(preset('codex'), preparePriming(dir, preset('codex'), prompt, true, '/c/bin'));
    expect(args[0]).to.equal('-c');
    expect(parseToml(args[1], 'arg')).to.deep.equal({ developer_instructions: prompt });
    // A provider with no system prompt takes it as the first turn: nothing on its command line.
    expect(
      primingArgs(preset('generic'), preparePriming(dir, preset('generic'), prompt, true, '/c/bin')),
    ).to.deep.equal([]);
  });

  it('Gemini CLI: the prompt as GEMINI.md, alone in a directory it includes (rebuilt at each start), the workspace trusted', () => {
    const context = join(dir, 'context');
    const first = preparePriming(dir, preset('gemini'), 'You are worker.', true, '/c/bin');
    expect(primingArgs(preset('gemini'), first)).to.deep.equal(['--skip-trust', '--include-directories', context]);
    expect(readdirSync(context)).to.deep.equal(['GEMINI.md']);
    expect(readFileSync(join(context, 'GEMINI.md'), 'utf8')).to.equal('You are worker.');
    // Gemini CLI reads everything there: what an earlier start left is gone.
    writeFileSync(join(context, 'stale.md'), 'old');
    preparePriming(dir, preset('gemini'), 'You are reviewer.', true, '/c/bin');
    expect(readdirSync(context)).to.deep.equal(['GEMINI.md']);
    expect(readFileSync(join(context, 'GEMINI.md'), 'utf8')).to.equal('You are reviewer.');
    // No settings file: Gemini CLI takes none of Claude Code's.
    expect(readdirSync(dir).sort()).to.deep.equal(['context', 'system-prompt.md']);
  });

  it('Qwen Code: the prompt itself as one argument of --append-system-prompt, whatever it holds', () => {
    const prompt = 'Use "{prompt_file}" and {prompt_toml} literally;\nthen $HOME `x`';
    const args = primingArgs(preset('qwen'), preparePriming(dir, preset('qwen'), prompt, true, '/c/bin'));
    expect(args).to.deep.equal(['--append-system-prompt', prompt]);
  });

  it('placeholders are filled in once, within an argument; a context file name that could leave its directory is refused', () => {
    const provider = { ...preset('generic'), system_prompt_args: ['--sys={prompt_text}', '{context_dir:AGENTS.md}'] };
    const priming = preparePriming(dir, provider, 'P {context_dir:X.md}', true, '/c/bin');
    expect(primingArgs(provider, priming)).to.deep.equal(['--sys=P {context_dir:X.md}', join(dir, 'context')]);
    expect(readdirSync(join(dir, 'context'))).to.deep.equal(['AGENTS.md']);
    for (const bad of ['{context_dir:../x.md}', '{context_dir:..}', '{context_dir:}', '-f={context_dir:a/b}']) {
      expect(() => parseProviderSpec({ system_prompt_args: [bad] }, 'city.toml: providers.mine'))
        .to.throw(ConfigError)
        .with.property('message')
        .that.includes(`city.toml: providers.mine.system_prompt_args: ${JSON.stringify(bad)}`);
    }
  });
});
