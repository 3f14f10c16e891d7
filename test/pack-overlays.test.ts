import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { startSessionCity, type SessionCity } from './helpers/sessions.js';
import { tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

// A pack's own `overlay/` and the `_append` keys of `[[patches.agent]]`, in a real city: an imported pack's overlay
// is laid into the work directory of every agent of the city (not its `per-provider/`, which validate names), and
// a patch's pre_start_append and session_setup_append run after the agent's own commands, env_remove taking a key
// out of what they see.
describe('pack overlays and patch appends (real controller, example agent)', function () {
  let city: SessionCity;
  let pack: string;
  let rigDir: string;
  let includedRigDir: string;

  before(async function () {
    pack = tempDir('ctl-overlay-pack-');
    const city0 = tempDir('ctl-overlay-rig-');
    rigDir = city0;
    includedRigDir = tempDir('ctl-overlay-rig2-');
    mkdirSync(join(pack, 'overlay', 'tools'), { recursive: true });
    mkdirSync(join(pack, 'overlay', 'per-provider', 'codex', '.codex'), { recursive: true });
    writeFileSync(join(pack, 'pack.toml'), '[pack]\nname = "tools"\n');
    writeFileSync(join(pack, 'overlay', 'TOOLS.md'), 'from the pack\n');
    writeFileSync(join(pack, 'overlay', 'tools', 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
    writeFileSync(join(pack, 'overlay', 'per-provider', 'codex', '.codex', 'hooks.json'), '{}\n');
    // A pack a rig imports: its overlay goes to the rig's agents only, over the city's packs'.
    const web = tempDir('ctl-overlay-web-');
    mkdirSync(join(web, 'overlay'));
    mkdirSync(join(web, 'agents', 'dev'), { recursive: true });
    writeFileSync(join(web, 'pack.toml'), '[pack]\nname = "web"\n');
    writeFileSync(join(web, 'overlay', 'WEB.md'), 'from the rig’s pack\n');
    writeFileSync(join(web, 'overlay', 'TOOLS.md'), 'the rig’s pack wins\n');
    writeFileSync(
      join(web, 'agents', 'dev', 'agent.toml'),
      'scope = "rig"\nprovider = "echo"\nmin_active_sessions = 1\npre_start = ["echo own > order.txt"]\n',
    );
    city = await startSessionCity(
      'overlays',
      `
[imports.tools]
source = "${pack}"

[[agent]]
name = "worker"
provider = "echo"
work_dir = "work/worker"
min_active_sessions = 1
env = { KEPT = "kept", SECRET = "dropped" }
pre_start = ["echo own > order.txt"]
session_setup = ["echo setup-own >> setup.txt"]

[[patches.agent]]
name = "worker"
pre_start_append = ["echo appended:$KEPT:\${SECRET:-none} >> order.txt"]
session_setup_append = ["echo setup-appended >> setup.txt"]
env_remove = ["SECRET"]

[[rigs]]
name = "app"
path = "${city0}"

[rigs.imports.web]
source = "${web}"

[[rigs.overrides]]
agent = "dev"
pre_start_append = ["echo by-the-rig >> order.txt"]

[[rigs]]
name = "lib"
path = "${includedRigDir}"
includes = ["${web}"]
`,
    );
  });

  after(async function () {
    await city?.sup.cleanup();
  });

  it('lays the pack’s overlay into the agent’s work directory and runs the appended commands after its own', async function () {
    const work = join(city.dir, 'work', 'worker');
    await waitUntil('setup.txt with both commands', async () => {
      const text = existsSync(join(work, 'setup.txt')) ? readFileSync(join(work, 'setup.txt'), 'utf8') : '';
      return text.includes('setup-appended');
    });
    expect(readFileSync(join(work, 'TOOLS.md'), 'utf8')).to.equal('from the pack\n');
    expect(existsSync(join(work, 'tools', 'run.sh'))).to.equal(true);
    expect(existsSync(join(work, 'per-provider')), 'per-provider/ is not copied as it is').to.equal(false);
    expect(existsSync(join(work, '.codex')), 'nor its provider hooks').to.equal(false);
    expect(readFileSync(join(work, 'order.txt'), 'utf8')).to.equal('own\nappended:kept:none\n');
    expect(readFileSync(join(work, 'setup.txt'), 'utf8')).to.equal('setup-own\nsetup-appended\n');
  });

  it('lays a rig’s pack overlay over the city’s into the rig’s agents, and runs the rig override’s pre_start_append', async function () {
    const rig = rigDir;
    await waitUntil('the rig agent’s pre_start_append', async () => {
      const text = existsSync(join(rig, 'order.txt')) ? readFileSync(join(rig, 'order.txt'), 'utf8') : '';
      return text.includes('by-the-rig');
    });
    expect(readFileSync(join(rig, 'order.txt'), 'utf8')).to.equal('own\nby-the-rig\n');
    expect(readFileSync(join(rig, 'WEB.md'), 'utf8')).to.equal('from the rig’s pack\n');
    expect(readFileSync(join(rig, 'TOOLS.md'), 'utf8')).to.equal('the rig’s pack wins\n');
    expect(existsSync(join(rig, 'tools', 'run.sh')), 'the city’s pack overlay too').to.equal(true);
    expect(existsSync(join(city.dir, 'work', 'worker', 'WEB.md')), 'not in the city’s agents').to.equal(false);
  });

  it('takes a rig’s includes (the older form of its imports) whole: its agent, by its own name, gets the overlay', async function () {
    const order = join(includedRigDir, 'order.txt');
    await waitUntil('lib/dev’s pre_start', async () => existsSync(order) && readFileSync(order, 'utf8') === 'own\n');
    expect((await city.api.get<{ name: string }>('/agent/lib/dev')).body.name).to.equal('lib/dev');
    expect(readFileSync(join(includedRigDir, 'WEB.md'), 'utf8')).to.equal('from the rig’s pack\n');
  });

  it('validate names the overlay’s per-provider/ and nothing about the patch', async function () {
    const { body } = await city.api.get<{
      errors: unknown[];
      warnings: { file: string; key?: string; message: string }[];
    }>('/config/validate');
    expect(body.errors).to.deep.equal([]);
    const found = body.warnings.map((w) => `${w.file} ${w.key ?? ''}`);
    expect(found).to.include('pack:tools/overlay per-provider');
    expect(found.filter((w) => w.startsWith('city.toml'))).to.deep.equal([]);
  });
});
