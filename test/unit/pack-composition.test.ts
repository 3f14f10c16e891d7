import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import { parseCityConfig } from '../../shared/config/city-config.js';
import { composeConfig } from '../../controller/config/compose.js';
import { promptFor, type AgentDefinition } from '../../controller/agent-catalog/agent-catalog.js';
import { OrderCatalog } from '../../controller/orders/order-catalog.js';

// What packs bring beyond their agents: `[workspace] includes` (packs taken in whole, their agents bare), an
// import's `export` (a re-exported pack's agents named under its importer), a pack's `[[patches.agent]]`,
// `[pack] description` and commands, and prompt templates with their fragments (`global_fragments`,
// `inject_fragments`, `template-fragments/`).
describe('pack composition', function () {
  let root: string;
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  };
  beforeEach(function () {
    root = mkdtempSync(join(tmpdir(), 'ctl-packs-'));
  });
  afterEach(function () {
    rmSync(root, { recursive: true, force: true });
  });
  const compose = (cityToml: string) =>
    composeConfig(root, parseCityConfig(cityToml, 'city.toml'), { cacheRoot: join(root, 'cache') });

  it('[workspace] includes loads a pack whole: its agents and orders keep their names', function () {
    write('packs/ops/pack.toml', '[pack]\nname = "ops"\ndescription = "Operations"\n');
    write('packs/ops/agents/mayor/agent.toml', 'scope = "city"\n');
    write('packs/ops/orders/sweep.toml', '[order]\ntrigger = "manual"\nexec = "true"\n');
    const composed = compose('[workspace]\nname = "c"\nincludes = ["packs/ops"]\n');
    expect(composed.problems).to.deep.equal([]);
    expect(composed.agents.map((a) => a.name)).to.deep.equal(['mayor']);
    expect(composed.unsupported.map((w) => w.key)).not.to.include('workspace.includes');
    const pack = composed.packs[0];
    expect(pack).to.include({ binding: 'ops', namespace: '', description: 'Operations', direct: false });
    const orders = new OrderCatalog(
      root,
      () => ({ overrides: [], skip: [] }),
      () => [{ binding: pack.binding, namespace: pack.namespace, dir: join(pack.dir!, 'orders'), root: pack.dir! }],
    );
    expect(orders.list().orders.map((o) => o.name)).to.deep.equal(['sweep']);
  });

  it('[[rigs]] includes loads a pack whole into the rig: its agents keep their names', function () {
    write('packs/web/pack.toml', '[pack]\nname = "web"\n');
    write('packs/web/agents/dev/agent.toml', 'scope = "rig"\n');
    write('packs/web/agents/boss/agent.toml', 'scope = "city"\n');
    mkdirSync(join(root, 'app'));
    const composed = compose(
      '[[rigs]]\nname = "app"\npath = "app"\nincludes = ["packs/web", "packs/gone"]\n' +
        '[[rigs.overrides]]\nagent = "dev"\nsuspended = true\n',
    );
    // Its city-scoped agent goes to the city, as the reference hoists it.
    expect(composed.agents.map((a) => [a.dir, a.name, a.suspended])).to.deep.equal([
      [undefined, 'boss', false],
      ['app', 'dev', true],
    ]);
    expect(composed.packs.map((p) => [p.binding, p.namespace, p.direct])).to.deep.equal([
      ['app/web', '', false],
      ['app/gone', '', false],
    ]);
    expect(composed.problems.map((p) => p.key)).to.deep.equal(['rigs.app.includes']);
    expect(composed.unsupported).to.deep.equal([]);
  });

  it('a city-scoped agent a rig’s pack brings is taken to the city once, unless the city has it', function () {
    write(
      'packs/web/pack.toml',
      '[pack]\nname = "web"\n[[named_session]]\ntemplate = "boss"\nscope = "city"\nmode = "always"\n' +
        '[[patches.agent]]\nname = "boss"\nenv = { FROM = "pack" }\n',
    );
    write('packs/web/agents/dev/agent.toml', 'scope = "rig"\n');
    write('packs/web/agents/boss/agent.toml', 'scope = "city"\nmin_active_sessions = 0\n');
    mkdirSync(join(root, 'app'));
    mkdirSync(join(root, 'api'));
    const rigs =
      '[[rigs]]\nname = "app"\npath = "app"\n[rigs.imports.web]\nsource = "./packs/web"\n' +
      '[[rigs]]\nname = "api"\npath = "api"\n[rigs.imports.web]\nsource = "./packs/web"\n';
    let composed = compose(rigs);
    expect(composed.problems).to.deep.equal([]);
    expect(composed.agents.map((a) => [a.dir, a.name])).to.deep.equal([
      [undefined, 'web.boss'],
      ['app', 'web.dev'],
      ['api', 'web.dev'],
    ]);
    const boss = composed.agents.find((a) => a.name === 'web.boss')!;
    expect(boss).to.include({ min_active_sessions: 1 });
    expect(boss.env).to.deep.equal({ FROM: 'pack' });
    // Imported at the city too: the city's copy is the one.
    composed = compose(`[imports.web]\nsource = "./packs/web"\n${rigs}`);
    expect(composed.problems).to.deep.equal([]);
    expect(composed.agents.filter((a) => a.name === 'web.boss').map((a) => a.source)).to.deep.equal([
      'pack:web/agents/boss/agent.toml',
    ]);
  });

  it('transitive = false loads only the pack’s own agents and orders, none of the packs it takes in', function () {
    write('packs/bd/pack.toml', '[pack]\nname = "bd"\nincludes = ["extra"]\n[imports.dolt]\nsource = "./dolt"\n');
    write('packs/bd/agents/scribe/agent.toml', '');
    write('packs/bd/overlay/BD.md', 'bd');
    write('packs/bd/dolt/pack.toml', '[pack]\nname = "dolt"\n');
    write('packs/bd/dolt/agents/dog/agent.toml', '');
    write('packs/bd/dolt/overlay/DOLT.md', 'dolt');
    write('packs/bd/extra/pack.toml', '[pack]\nname = "extra"\n');
    write('packs/bd/extra/agents/cat/agent.toml', '');
    let composed = compose('[imports.bd]\nsource = "./packs/bd"\n');
    expect(composed.agents.map((a) => a.name)).to.deep.equal(['bd.scribe', 'bd.cat', 'bd.dolt.dog']);
    composed = compose('[imports.bd]\nsource = "./packs/bd"\ntransitive = false\n');
    expect(composed.problems).to.deep.equal([]);
    expect(composed.unsupported).to.deep.equal([]);
    expect(composed.agents.map((a) => a.name)).to.deep.equal(['bd.scribe']);
    expect(composed.packs.map((p) => p.binding)).to.deep.equal(['bd']);
    expect(composed.agents[0].pack_overlays?.map((d) => d.slice(root.length + 1))).to.deep.equal(['packs/bd/overlay']);
  });

  it('an include that is not there is a problem naming workspace.includes', function () {
    const composed = compose('[workspace]\nname = "c"\nincludes = ["packs/gone"]\n');
    expect(composed.problems.map((p) => p.key)).to.deep.equal(['workspace.includes']);
  });

  it("export = true names a pack's import's agents under the pack; without it, under the import's binding", function () {
    write('packs/bd/pack.toml', '[pack]\nname = "bd"\n[imports.dolt]\nsource = "./dolt"\nexport = true\n');
    write('packs/bd/dolt/pack.toml', '[pack]\nname = "dolt"\n');
    write('packs/bd/dolt/agents/dog/agent.toml', '');
    write('packs/bd/dolt/orders/health.toml', '[order]\ntrigger = "manual"\nexec = "true"\n');
    let composed = compose('[imports.bd]\nsource = "./packs/bd"\n');
    expect(composed.problems).to.deep.equal([]);
    expect(composed.agents.map((a) => a.name)).to.deep.equal(['bd.dog']);
    expect(composed.packs.map((p) => [p.binding, p.namespace])).to.deep.equal([
      ['bd', 'bd'],
      ['bd.dolt', 'bd'],
    ]);
    expect(composed.unsupported.map((w) => w.key)).not.to.include('imports.dolt.export');
    write('packs/bd/pack.toml', '[pack]\nname = "bd"\n[imports.dolt]\nsource = "./dolt"\n');
    composed = compose('[imports.bd]\nsource = "./packs/bd"\n');
    expect(composed.agents.map((a) => a.name)).to.deep.equal(['bd.dolt.dog']);
  });

  it("a pack's [[patches.agent]] changes its agents by their names in the pack; one naming none is a problem", function () {
    write(
      'packs/sw/pack.toml',
      '[pack]\nname = "sw"\n[imports.inner]\nsource = "./inner"\n' +
        '[[patches.agent]]\nname = "coder"\nidle_timeout = "5m"\nenv = { MODE = "fast" }\n' +
        '[[patches.agent]]\nname = "inner.helper"\nsuspended = true\n' +
        '[[patches.agent]]\nname = "ghost"\nsuspended = true\n',
    );
    write('packs/sw/agents/coder/agent.toml', 'env = { KEEP = "1" }\n');
    write('packs/sw/inner/agents/helper/agent.toml', '');
    const composed = compose('[imports.sw]\nsource = "./packs/sw"\n');
    const byName = Object.fromEntries(composed.agents.map((a) => [a.name, a]));
    expect(byName['sw.coder']).to.include({ idle_timeout_ms: 300_000 });
    expect(byName['sw.coder'].env).to.deep.equal({ KEEP: '1', MODE: 'fast' });
    expect(byName['sw.inner.helper'].suspended).to.equal(true);
    expect(composed.problems.map((p) => p.message)).to.deep.equal([
      'pack:sw/pack.toml: patches.agent[2]: the pack has no agent named ghost to patch',
    ]);
    expect(composed.unsupported.map((w) => w.key)).not.to.include('patches');
  });

  it("a pack's commands: [[commands]] and commands/<words>/run.sh with command.toml", function () {
    write(
      'packs/db/pack.toml',
      '[pack]\nname = "db"\n[[commands]]\nname = "status"\ndescription = "Show status"\nscript = "scripts/status.sh"\n',
    );
    write('packs/db/scripts/status.sh', 'echo ok\n');
    write('packs/db/commands/sql/run.sh', 'echo sql\n');
    write('packs/db/commands/sql/command.toml', 'description = "Run SQL"\n');
    write('packs/db/commands/repo/sync/run.sh', 'echo sync\n');
    write('packs/db/commands/repo/sync/help.md', 'Syncs.\n');
    const composed = compose('[imports.db]\nsource = "./packs/db"\n');
    expect(composed.problems).to.deep.equal([]);
    expect(composed.packs[0].commands).to.deep.equal([
      { words: ['status'], script: 'scripts/status.sh', description: 'Show status' },
      { words: ['repo', 'sync'], script: 'commands/repo/sync/run.sh', help: 'commands/repo/sync/help.md' },
      { words: ['sql'], script: 'commands/sql/run.sh', description: 'Run SQL' },
    ]);
    expect(composed.unsupported.map((w) => w.key)).not.to.include('commands');
  });

  describe('prompt templates and fragments', function () {
    const definition = (agent: ReturnType<typeof compose>['agents'][number], rig?: string) =>
      ({ name: agent.name, config: agent, workDir: '/w', ...(rig ? { rig } : {}) }) as unknown as AgentDefinition;

    it('renders a prompt.template.md with its pack’s fragments, then global_fragments and inject_fragments', function () {
      write(
        'packs/gt/template-fragments/common.template.md',
        '{{ define "glossary" }}Run `{{ cmd }} prime`.{{ end }}\n{{- define "aware" -}}\nYou are {{ basename .AgentName }}.\n{{- end }}\n{{ define "extra" }}Extra for {{ .BindingName }}.{{ end }}',
      );
      write('packs/gt/agents/mayor/agent.toml', 'inject_fragments = ["extra"]\n');
      write(
        'packs/gt/agents/mayor/prompt.template.md',
        '# Mayor {{ .BindingPrefix }}mayor in {{ .CityRoot }}\n{{ template "glossary" . }}\n{{ if .RigName }}rig{{ else }}city{{ end }} {{ agent }}',
      );
      const composed = compose(
        '[workspace]\nname = "c"\nglobal_fragments = ["aware"]\n[imports.gt]\nsource = "./packs/gt"\n',
      );
      expect(composed.problems).to.deep.equal([]);
      const mayor = composed.agents.find((a) => a.name === 'gt.mayor')!;
      expect(promptFor(definition(mayor), { city: 'c', session: 's1' })).to.equal(
        `# Mayor gt.mayor in ${root}\nRun \`ctl prime\`.\ncity gt.mayor\n\nYou are gt.mayor.\n\nExtra for gt.`,
      );
      expect(composed.unsupported.map((w) => w.key)).not.to.include('workspace.global_fragments');
    });

    it('a fragment defined nowhere is a problem, and the rest of the prompt renders', function () {
      write('agents/scribe/prompt.template.md', 'Hello {{ .AgentName }}');
      const composed = compose('[workspace]\nname = "c"\nglobal_fragments = ["missing"]\n');
      expect(composed.problems.map((p) => [p.file, p.key])).to.deep.equal([
        ['city.toml', 'workspace.global_fragments'],
      ]);
      const scribe = composed.agents.find((a) => a.name === 'scribe')!;
      expect(promptFor(definition(scribe), { city: 'c', session: 's1' })).to.equal('Hello scribe');
    });

    it('a template that does not parse is a problem, and its text goes as ctl’s own templates do', function () {
      write('agents/scribe/prompt.template.md', '{{ range .X }}x{{ end }} {{agent}}');
      const composed = compose('[workspace]\nname = "c"\n');
      expect(composed.problems.map((p) => p.file)).to.deep.equal(['agents/scribe/prompt.template.md']);
      const scribe = composed.agents.find((a) => a.name === 'scribe')!;
      expect(promptFor(definition(scribe), { city: 'c', session: 's1' })).to.equal('{{ range .X }}x{{ end }} scribe');
    });
  });
});
