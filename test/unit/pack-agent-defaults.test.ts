import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import { parseCityConfig } from '../../shared/config/city-config.js';
import { composeConfig } from '../../controller/config/compose.js';

// A pack's `[agent_defaults]` as the reference applies it: `provider`, `default_sling_formula` and
// `append_fragments` for the pack's own agents and its includes' (never its imports'), where an agent sets none;
// an included pack's own defaults first. Under an import binding the pack's win over the city's `[agent_defaults]`;
// an agent the city took in bare (`[workspace] includes`) takes the city's when it has one.
describe('pack [agent_defaults] (in-process)', function () {
  let root: string;
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  };
  beforeEach(function () {
    root = mkdtempSync(join(tmpdir(), 'ctl-pack-defaults-'));
    write(
      'packs/ops/pack.toml',
      '[pack]\nname = "ops"\nincludes = ["inner"]\n[imports.other]\nsource = "./other"\n' +
        '[agent_defaults]\nprovider = "codex"\ndefault_sling_formula = "mol-ops"\nappend_fragments = ["ops-rules"]\n' +
        'model = "opus"\n',
    );
    write('packs/ops/agents/plain/agent.toml', '');
    write('packs/ops/agents/own/agent.toml', 'provider = "claude"\n');
    write('packs/ops/inner/pack.toml', '[pack]\nname = "inner"\n[agent_defaults]\nprovider = "gemini"\n');
    write('packs/ops/inner/agents/deep/agent.toml', '');
    write('packs/ops/other/pack.toml', '[pack]\nname = "other"\n');
    write('packs/ops/other/agents/far/agent.toml', '');
  });
  afterEach(function () {
    rmSync(root, { recursive: true, force: true });
  });
  const compose = (cityToml: string) =>
    composeConfig(root, parseCityConfig(cityToml, 'city.toml'), { cacheRoot: join(root, 'cache') });
  const view = (composed: ReturnType<typeof compose>) =>
    Object.fromEntries(
      composed.agents.map((a) => [a.name, [a.provider, a.default_sling_formula, a.append_fragments ?? []]]),
    );

  it('an imported pack’s defaults reach its own agents and its includes’, and win over the city’s', function () {
    const composed = compose(
      '[imports.ops]\nsource = "./packs/ops"\n[agent_defaults]\nprovider = "echo"\nappend_fragments = ["city-rules"]\n',
    );
    expect(composed.problems).to.deep.equal([]);
    expect(view(composed)).to.deep.equal({
      'ops.own': ['claude', 'mol-ops', ['ops-rules', 'city-rules']],
      'ops.plain': ['codex', 'mol-ops', ['ops-rules', 'city-rules']],
      'ops.deep': ['gemini', 'mol-ops', ['ops-rules', 'city-rules']],
      'ops.other.far': ['echo', undefined, ['city-rules']],
    });
    expect(composed.unsupported.map((w) => `${w.file} ${w.key}`)).to.deep.equal([
      'pack:ops/pack.toml agent_defaults.model',
    ]);
  });

  it('a pack the city includes gives way to the city’s [agent_defaults]', function () {
    const composed = compose('[workspace]\nincludes = ["packs/ops"]\n[agent_defaults]\nprovider = "echo"\n');
    expect(view(composed)).to.deep.include({
      plain: ['echo', 'mol-ops', ['ops-rules']],
      deep: ['echo', 'mol-ops', ['ops-rules']],
    });
    expect(view(compose('[workspace]\nincludes = ["packs/ops"]\n')).plain).to.deep.equal([
      'codex',
      'mol-ops',
      ['ops-rules'],
    ]);
  });

  it('the city’s own pack.toml [agent_defaults] is named as not supported', function () {
    write('pack.toml', '[pack]\nname = "c"\n[agent_defaults]\nprovider = "codex"\n');
    const composed = compose('[workspace]\nname = "c"\n');
    expect(composed.unsupported.map((w) => `${w.file} ${w.key}`)).to.deep.equal(['pack.toml agent_defaults']);
  });
});
