import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { expect } from 'chai';
import pino from 'pino';
import { parseCityConfig, type CityAgentConfig } from '../../shared/config/city-config.js';
import { composeConfig } from '../../controller/config/compose.js';
import type { AgentDefinition } from '../../controller/agent-catalog/agent-catalog.js';
import { AgentStartSteps } from '../../controller/agents/agent-start.js';
import { CommandRunner } from '../../controller/commands.js';
import type { SessionRecord } from '../../controller/sessions/session-store.js';

// A pack's own `overlay/`, as the reference lays it: every pack loaded at the city gives its overlay to every
// agent of the city, a rig's packs to that rig's agents; a pack's imports are below it, the city's packs below a
// rig's, and the agent's own overlay_dir above them all. `per-provider/` (provider hooks) is named, never copied.
describe('pack overlays (in-process)', function () {
  let root: string;
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  };
  beforeEach(function () {
    root = mkdtempSync(join(tmpdir(), 'ctl-overlays-'));
  });
  afterEach(function () {
    rmSync(root, { recursive: true, force: true });
  });
  const compose = (cityToml: string) =>
    composeConfig(root, parseCityConfig(cityToml, 'city.toml'), { cacheRoot: join(root, 'cache') });

  function layout(): void {
    // ops (included) and outer (imported), which imports inner; web imported by the rig `app`.
    write('packs/ops/pack.toml', '[pack]\nname = "ops"\n');
    write('packs/ops/overlay/ops.txt', 'ops');
    write('packs/ops/overlay/same.txt', 'from ops');
    write('packs/outer/pack.toml', '[pack]\nname = "outer"\n[imports.inner]\nsource = "./inner"\n');
    write('packs/outer/agents/boss/agent.toml', 'scope = "city"\n');
    write('packs/outer/overlay/same.txt', 'from outer');
    write('packs/outer/overlay/per-provider/codex/.codex/hooks.json', '{}');
    write('packs/outer/inner/pack.toml', '[pack]\nname = "inner"\n');
    write('packs/outer/inner/overlay/same.txt', 'from inner');
    write('packs/outer/inner/overlay/inner.txt', 'inner');
    write('packs/web/pack.toml', '[pack]\nname = "web"\n');
    write('packs/web/agents/dev/agent.toml', 'scope = "rig"\n');
    write('packs/web/overlay/same.txt', 'from web');
    mkdirSync(join(root, 'app'));
  }
  const CITY =
    '[workspace]\nname = "c"\nincludes = ["packs/ops"]\n[imports.outer]\nsource = "./packs/outer"\n' +
    '[[agent]]\nname = "mayor"\n[[rigs]]\nname = "app"\npath = "app"\n[rigs.imports.web]\nsource = "./packs/web"\n';

  it('gathers the overlays of the city’s packs for every agent, and a rig’s packs’ for its agents after them', function () {
    layout();
    const composed = compose(CITY);
    expect(composed.problems).to.deep.equal([]);
    const overlaysOf = (name: string) =>
      composed.agents.find((a) => a.name === name)!.pack_overlays?.map((d) => d.slice(root.length + 1));
    const city = ['packs/ops/overlay', 'packs/outer/inner/overlay', 'packs/outer/overlay'];
    expect(overlaysOf('mayor')).to.deep.equal(city);
    expect(overlaysOf('outer.boss')).to.deep.equal(city);
    expect(overlaysOf('web.dev')).to.deep.equal([...city, 'packs/web/overlay']);
    expect(composed.unsupported.map((w) => `${w.file} ${w.key}`)).to.deep.equal(['pack:outer/overlay per-provider']);
  });

  it('a city without packs with overlays gives its agents none', function () {
    write('packs/bare/pack.toml', '[pack]\nname = "bare"\n');
    const composed = compose('[imports.bare]\nsource = "./packs/bare"\n[[agent]]\nname = "mayor"\n');
    expect(composed.agents[0].pack_overlays).to.equal(undefined);
  });

  it('names a per-provider/ in an agent’s own overlay_dir as not supported', function () {
    write('agents/w/agent.toml', '');
    write('agents/w/overlay/per-provider/claude/CLAUDE.md', 'x');
    const composed = compose('[workspace]\nname = "c"\n');
    expect(composed.unsupported.map((w) => `${w.file} ${w.key}`)).to.deep.equal(['agents/w/agent.toml overlay_dir']);
  });

  it('lays them into the work directory before each start: the agent’s own first, then the last pack’s', async function () {
    layout();
    write('agents/mayor/agent.toml', '');
    write('agents/mayor/overlay/own.txt', 'own');
    const composed = compose(
      '[workspace]\nname = "c"\nincludes = ["packs/ops"]\n[imports.outer]\nsource = "./packs/outer"\n',
    );
    const agent = composed.agents.find((a) => a.name === 'mayor')!;
    const work = join(root, 'work');
    mkdirSync(work);
    writeFileSync(join(work, 'ops.txt'), 'the person’s own');
    const commands = new CommandRunner();
    try {
      const steps = stepsFor(agent, work, commands);
      const record = { id: 's1', kind: 'agent', template: 'mayor', session_name: 'mayor-1', work_dir: work };
      await steps.beforeProgram(
        { record: record as SessionRecord, saveFields: () => {}, recordLifecycle: async () => {} },
        work,
      );
    } finally {
      commands.stop();
    }
    const read = (f: string) => readFileSync(join(work, f), 'utf8');
    expect(read('same.txt')).to.equal('from outer');
    expect(read('inner.txt')).to.equal('inner');
    expect(read('own.txt')).to.equal('own');
    expect(read('ops.txt')).to.equal('the person’s own');
    expect(existsSync(join(work, 'per-provider'))).to.equal(false);
    expect(existsSync(join(work, '.codex'))).to.equal(false);

    // The agent's own overlay_dir wins a file over every pack's.
    write('agents/mayor/overlay/same.txt', 'own');
    const again = compose('[imports.outer]\nsource = "./packs/outer"\n');
    const work2 = join(root, 'work2');
    const commands2 = new CommandRunner();
    try {
      const steps = stepsFor(
        again.agents.find((a) => a.name === 'mayor')!,
        work2,
        commands2,
      );
      const record = { id: 's2', kind: 'agent', template: 'mayor', session_name: 'mayor-2', work_dir: work2 };
      await steps.beforeProgram(
        { record: record as SessionRecord, saveFields: () => {}, recordLifecycle: async () => {} },
        work2,
      );
    } finally {
      commands2.stop();
    }
    expect(readFileSync(join(work2, 'same.txt'), 'utf8')).to.equal('own');
  });

  function stepsFor(agent: CityAgentConfig, work: string, commands: CommandRunner): AgentStartSteps {
    const overlayDir = agent.overlay_dir !== undefined ? resolve(root, agent.overlay_dir) : undefined;
    return new AgentStartSteps({
      cityName: 'c',
      cityRoot: root,
      sessionsDir: root,
      env: {},
      commands,
      logger: pino({ level: 'silent' }),
      agent: (name) =>
        ({
          name,
          base: name,
          workDir: work,
          config: agent,
          ...(overlayDir !== undefined ? { overlayDir } : {}),
        }) as AgentDefinition,
      rigRoot: () => undefined,
      timeoutMs: () => 5000,
    });
  }
});
