import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Bead } from '../../shared/dto/beads.js';
import type { AgentDefinition } from '../../controller/agent-catalog/agent-catalog.js';
import { FormulaCatalog } from '../../controller/formulas/formula-catalog.js';
import { compileForRun } from '../../controller/formulas/launch.js';
import { RunVars, type RunVarsHost } from '../../controller/formulas/run-vars.js';

const agent = (name: string, extra: Partial<AgentDefinition> = {}, config: Record<string, unknown> = {}) =>
  ({ name, base: name, workDir: '/nowhere', config: { name, ...config }, ...extra }) as unknown as AgentDefinition;

function host(over: Partial<RunVarsHost> = {}): RunVarsHost {
  const beads: Record<string, Bead> = {
    'ct-1': { id: 'ct-1', metadata: {} } as unknown as Bead,
    'app-9': { id: 'app-9', metadata: {} } as unknown as Bead,
    'ct-2': { id: 'ct-2', metadata: { target: 'release/2.0' } } as unknown as Bead,
  };
  const convoy = {
    id: 'ct-c1',
    issue_type: 'convoy',
    status: 'open',
    dependencies: [{ depends_on_id: 'ct-1', type: 'tracks' }],
  } as unknown as Bead;
  return {
    root: '/nowhere',
    rigs: () => [
      { name: 'app', path: 'app', prefix: 'app', default_branch: 'trunk', suspended: false },
      { name: 'web', path: 'web', suspended: false, formula_vars: { test_command: 'make test' } },
    ],
    timezone: () => 'Pacific/Auckland',
    agent: (name) =>
      ({
        mayor: agent('mayor'),
        'web/gastown.polecat': agent('web/gastown.polecat', { rig: 'web' }, { pack: 'gastown' }),
        'web/fixed': agent('web/fixed', { rig: 'web' }, { base_branch: 'stable' }),
      })[name],
    bead: (id) => beads[id],
    dependents: (id) => (id === 'ct-1' ? [convoy] : []),
    // 2026-11-26 20:30 UTC is already the 27th in Auckland.
    now: () => Date.UTC(2026, 10, 26, 20, 30),
    defaultBranch: async () => 'main',
    ...over,
  };
}

describe('the vars a run knows itself (unit)', function () {
  it('fills bead, convoy, target, rig, binding, branch and date as the reference does', async function () {
    const vars = new RunVars(host());
    const polecat = await vars.of({ target: 'web/gastown.polecat', attachedBeadId: 'ct-1' });
    expect(polecat.builtins).to.deep.equal({
      date: '2026-11-27',
      attached_bead_id: 'ct-1',
      issue: 'ct-1',
      convoy_id: 'ct-c1',
      target: 'web/gastown.polecat',
      rig_name: 'web',
      binding_name: 'gastown',
      binding_prefix: 'gastown.',
      base_branch: 'main',
      target_branch: 'main',
    });
    expect(polecat.rigVars).to.deep.equal({ test_command: 'make test' });
    // A city agent: no rig, no binding; the launch's own convoy wins over one found tracking the bead.
    const mayor = await vars.of({ target: 'mayor', attachedBeadId: 'ct-1', convoyId: 'ct-c9' });
    expect(mayor.builtins).to.include({ rig_name: '', binding_name: '', binding_prefix: '', convoy_id: 'ct-c9' });
    // Nothing to go by: only the date, and no branch when the repository has none.
    const bare = await new RunVars(host({ defaultBranch: async () => undefined })).of({});
    expect(bare.builtins).to.deep.equal({ date: '2026-11-27' });
  });

  it('the branch: the bead’s target metadata, its rig’s default_branch, the agent’s base_branch, then git', async function () {
    const vars = new RunVars(host());
    const branch = async (target: string, bead?: string) =>
      (await vars.of({ target, ...(bead ? { attachedBeadId: bead } : {}) })).builtins.base_branch;
    expect(await branch('web/fixed', 'ct-2')).to.equal('release/2.0');
    expect(await branch('web/fixed', 'app-9')).to.equal('trunk');
    expect(await branch('web/fixed', 'ct-1')).to.equal('stable');
    expect(await branch('mayor', 'ct-1')).to.equal('main');
  });

  it('a formula declaring a builtin gets the run’s value over its default; the rig’s formula_vars and the launch win', async function () {
    const dir = mkdtempSync(join(tmpdir(), 'ctl-run-vars-'));
    try {
      mkdirSync(join(dir, 'formulas'));
      writeFileSync(
        join(dir, 'formulas', 'work.toml'),
        `[vars]
base_branch = "develop"
test_command = "npm test"
[[steps]]
id = "go"
title = "{{issue}} on {{base_branch}} in {{rig_name}} by {{date}}: {{test_command}} ({{convoy_id}})"
`,
      );
      const catalog = new FormulaCatalog(dir, () => []);
      expect(catalog.get('work')!.errors).to.deep.equal([]);
      const run = await new RunVars(host()).of({ target: 'web/gastown.polecat', attachedBeadId: 'ct-1' });
      const title = (vars: Record<string, string>) => compileForRun(catalog, 'work', vars, run).nodes[0].title;
      expect(title({})).to.equal('ct-1 on main in web by 2026-11-27: make test (ct-c1)');
      expect(title({ base_branch: 'hotfix', test_command: 'true' })).to.equal(
        'ct-1 on hotfix in web by 2026-11-27: true (ct-c1)',
      );
      // Without a run's values (validate), builtins are known and stay as written.
      expect(compileForRun(catalog, 'work', {}).nodes[0].title).to.equal(
        '{{issue}} on develop in {{rig_name}} by {{date}}: npm test ({{convoy_id}})',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the formula catalog resolves extends across layers (unit)', function () {
  it('a city formula extending its own name gets the pack’s; an edit of the parent shows in the child', function () {
    const dir = mkdtempSync(join(tmpdir(), 'ctl-extends-'));
    try {
      const pack = join(dir, 'pack', 'formulas');
      mkdirSync(pack, { recursive: true });
      mkdirSync(join(dir, 'formulas'));
      const base = join(pack, 'base.toml');
      writeFileSync(base, '[[steps]]\nid = "one"\ntitle = "One"\n');
      writeFileSync(
        join(dir, 'formulas', 'base.toml'),
        'extends = ["base"]\n[[steps]]\nid = "two"\ntitle = "Two"\nneeds = ["one"]\n',
      );
      writeFileSync(join(dir, 'formulas', 'child.toml'), 'extends = ["base"]\n');
      const catalog = new FormulaCatalog(
        dir,
        () => [],
        () => [{ binding: 'p', dir: pack, root: join(dir, 'pack') }],
      );
      const ids = (name: string) => catalog.get(name)!.def?.steps.map((s) => s.id);
      expect(ids('base')).to.deep.equal(['one', 'two']);
      expect(ids('child')).to.deep.equal(['one', 'two']);
      expect(ids('p.base')).to.deep.equal(['one']);
      writeFileSync(base, '[[steps]]\nid = "zero"\ntitle = "Zero"\n[[steps]]\nid = "one"\ntitle = "One"\n');
      utimesSync(base, new Date(), new Date(Date.now() + 5000));
      expect(ids('child')).to.deep.equal(['zero', 'one', 'two']);
      // A cycle through two files is an error of each, named.
      writeFileSync(join(dir, 'formulas', 'a.toml'), 'extends = ["b"]\n');
      writeFileSync(join(dir, 'formulas', 'b.toml'), 'extends = ["a"]\n');
      expect(catalog.get('a')!.errors.join('\n')).to.include('a cycle (a → b → a)');
      // Text checked before a write resolves against the city's formulas too.
      expect(catalog.check('extends = ["child"]\n', 'new').errors).to.deep.equal([]);
      expect(catalog.check('extends = ["gone"]\n', 'new').errors).to.deep.equal([
        'formulas/new.toml: extends: gone: no formula of that name in this city',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
