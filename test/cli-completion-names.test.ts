import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { ctlEntryPath } from '../shared/paths.js';
import { findOnPath } from '../shared/readiness.js';
import { expectSuccess, runCtl } from './helpers/cli.js';
import { createSession, startSessionCity, type SessionCity } from './helpers/sessions.js';
import { freePort, tempDir } from './helpers/supervisor.js';

// Shell completion offers names from the running supervisor — cities, agents, sessions, beads, formulas, hosts — and
// nothing, silently, when it is down (issue 19, point 22). The real scripts in the real shells (bash always;
// zsh and fish where installed), calling the real `ctl` found on PATH.

describe('shell completion of names (the real scripts, shells and supervisor)', function () {
  this.timeout(60_000);
  let city: SessionCity;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let bead: string;
  let session: string;
  const scripts: Record<string, string> = {};

  before(async function () {
    city = await startSessionCity('named', '\n[[agent]]\nname = "worker"\nprovider = "echo"\nsuspended = true\n');
    mkdirSync(join(city.dir, 'formulas'), { recursive: true });
    writeFileSync(join(city.dir, 'formulas', 'tidy.toml'), '[[steps]]\nid = "a"\ntitle = "A"\n');
    bead = (await city.api.create({ title: 'complete me' })).id;
    session = await createSession(city.api, { name: 'echo' });
    dir = tempDir('ctl-complete-');
    // `ctl` on PATH, as an installed one is.
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'ctl'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${ctlEntryPath()} "$@"\n`);
    chmodSync(join(bin, 'ctl'), 0o755);
    env = { ...city.sup.env, PATH: `${bin}:${process.env.PATH}`, CTL_CITY: undefined };
    for (const shell of ['bash', 'zsh', 'fish']) {
      scripts[shell] = join(dir, `ctl.${shell}`);
      writeFileSync(scripts[shell], (await runCtl(['completion', shell])).stdout + '\n');
    }
  });
  after(async function () {
    await city?.sup.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  /** What bash offers for a line typed so far; stderr must stay empty (nothing is printed into a prompt). */
  function bash(line: string, extra: NodeJS.ProcessEnv = {}): string[] {
    const words = line.split(' ');
    const program = `source ${JSON.stringify(scripts.bash)}; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${
      words.length - 1
    }; _ctl; printf '%s\\n' "\${COMPREPLY[@]}"`;
    const result = spawnSync('bash', ['-c', program], { encoding: 'utf8', env: { ...env, ...extra } });
    expect(result.stderr, `stderr completing ${line}`).to.equal('');
    return result.stdout.split('\n').filter(Boolean);
  }

  it('bash: cities, agents, sessions, beads, formulas and hosts, as positionals and as flag values', function () {
    expect(bash('ctl city stop ')).to.deep.equal(['named']);
    expect(bash('ctl status na')).to.deep.equal(['named']);
    expect(bash('ctl bead list --city ')).to.deep.equal(['named']);
    expect(bash('ctl --city named agent show w')).to.deep.equal(['worker']);
    expect(bash('ctl --city named sling worker ')).to.include(bead);
    expect(bash('ctl bead show --city ')).to.deep.equal(['named']);
    expect(bash('ctl --city=named bead show ')).to.include(bead);
    expect(bash('ctl --city named formula show ')).to.deep.equal(['tidy']);
    expect(bash('ctl --city named session show ')).to.include(session);
    expect(bash('ctl --city named sling worker x --formula ')).to.deep.equal(['tidy']);
    expect(bash('ctl --city named host show ')).to.deep.equal(['local']);
    // In the city's directory, the city is the one in scope.
    const inside = spawnSync(
      'bash',
      [
        '-c',
        `cd ${JSON.stringify(city.dir)}; source ${scripts.bash}; COMP_WORDS=(ctl agent show ''); COMP_CWORD=3; _ctl; printf '%s\\n' "\${COMPREPLY[@]}"`,
      ],
      { encoding: 'utf8', env },
    );
    expect(inside.stdout.split('\n').filter(Boolean)).to.deep.equal(['worker']);
  });

  it('bash: with the supervisor down, no names and no noise: flags as before', async function () {
    const down = { CTL_API: `http://127.0.0.1:${await freePort()}` };
    expect(bash('ctl city stop ', down)).to.include('--json');
    expect(bash('ctl city stop ', down)).to.not.include('named');
    expect(bash('ctl bead list --city ', down)).to.deep.equal([]);
    // `ctl completion names` itself: nothing on stdout or stderr, exit 0.
    const names = await runCtl(['completion', 'names', 'agents', '--city', 'named'], { env: { ...env, ...down } });
    expect(names).to.deep.equal({ code: 0, stdout: '', stderr: '' });
    expect(expectSuccess(await runCtl(['completion', 'names', 'cities'], { env }))).to.deep.equal(['named']);
  });

  it('zsh and fish offer the same names, where installed', function () {
    if (findOnPath('zsh', process.env.PATH ?? '')) {
      const zsh = (words: string[]) =>
        execFileSync(
          'zsh',
          [
            '-c',
            `compadd() { shift; print -l -- "$@" }; _files() { print FILES }; source ${scripts.zsh}; ` +
              `words=(${words.map((w) => `'${w}'`).join(' ')}); CURRENT=${words.length}; _ctl`,
          ],
          { encoding: 'utf8', env },
        )
          .split('\n')
          .filter(Boolean);
      expect(zsh(['ctl', 'city', 'stop', ''])).to.deep.equal(['named']);
      expect(zsh(['ctl', '--city', 'named', 'agent', 'show', ''])).to.deep.equal(['worker']);
      expect(zsh(['ctl', 'bead', 'list', '--city', ''])).to.deep.equal(['named']);
    }
    if (findOnPath('fish', process.env.PATH ?? '')) {
      const fish = (line: string) =>
        execFileSync('fish', ['-c', `source ${scripts.fish}; complete -C'${line}'`], { encoding: 'utf8', env })
          .split('\n')
          .filter(Boolean)
          .map((l) => l.split('\t')[0]);
      expect(fish('ctl city stop ')).to.include('named');
      expect(fish('ctl --city named agent show ')).to.include('worker');
      expect(fish('ctl bead list --city ')).to.include('named');
      expect(fish('ctl --city named formula show ')).to.include('tidy');
    }
  });
});
