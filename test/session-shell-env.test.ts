import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { resolveProviders } from '../controller/providers/resolve.js';
import { sessionEnvironment, writeHeldBead } from '../controller/sessions/session-environment.js';
import type { SessionRecord } from '../controller/sessions/session-store.js';

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

const hasZsh = spawnSync('zsh', ['-c', 'true']).status === 0;

/**
 * The shell start-up files a session's programs get (BASH_ENV, ZDOTDIR), run by a real bash and zsh as an agent's
 * tool starts one: Claude Code and Codex run their commands in zsh where SHELL names it, or names no shell at all.
 */
describe("a session's shells read the bead it holds now (BASH_ENV and ZDOTDIR, real bash and zsh)", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ctl-shell-env-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('every bash runs the BASH_ENV it would have had, then reads the bead held at that moment', () => {
    const theirs = join(dir, 'theirs.sh');
    writeFileSync(theirs, 'THEIRS=yes; CTL_BEAD=theirs-1\n');
    // As a session's program starts it: its stdin a socket (Node's pipes), SHLVL and BASH_ENV from the session's
    // environment, a CTL_BEAD of its start that has gone stale since.
    const place = { cityName: 'a', cityRoot: dir, env: { PATH: process.env.PATH, BASH_ENV: theirs } };
    const env: NodeJS.ProcessEnv = {
      ...sessionEnvironment(place, record, resolveProviders({}, {}, 'city.toml').get('claude')!, { dir }),
      CTL_BEAD: 'stale-1',
    };
    expect(env.BASH_ENV).to.equal(join(dir, 'shell-env.sh'));
    const run = () =>
      execFileSync('bash', ['-c', 'echo "${CTL_BEAD-unset} $THEIRS"'], { env, encoding: 'utf8' }).trim();
    writeHeldBead(dir, 'alp-3');
    expect(run()).to.equal('alp-3 yes');
    writeHeldBead(dir, undefined);
    expect(run()).to.equal('unset yes');
  });

  it('a login shell whose profile sets PATH outright (Debian’s /etc/profile does; Codex runs `bash -lc`) finds ctl first', function () {
    const home = join(dir, 'home');
    const bin = join(dir, 'city bin');
    mkdirSync(home);
    // The person's profiles stand for the system's: they set PATH as Debian's /etc/profile does.
    writeFileSync(join(home, '.profile'), 'PATH=/usr/bin:/bin\n');
    writeFileSync(join(home, '.zprofile'), 'PATH=/usr/bin:/bin\n');
    const place = { cityName: 'a', cityRoot: dir, env: { PATH: '/usr/bin:/bin', HOME: home }, ctlBin: bin };
    const env = sessionEnvironment(place, record, resolveProviders({}, {}, 'city.toml').get('codex')!, { dir });
    const path = (shell: string, ...args: string[]) =>
      execFileSync(shell, [...args, 'echo "$PATH"'], {
        env,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      }).trim();
    expect(path('bash', '-lc')).to.equal(`${bin}:/usr/bin:/bin`);
    expect(path('bash', '-c'), 'once, where it is first already').to.equal(`${bin}:/usr/bin:/bin`);
    if (!hasZsh) return; // as below: a machine without zsh has no zsh users
    expect(path('zsh', '-lc')).to.equal(`${bin}:/usr/bin:/bin`);
    expect(path('zsh', '-c')).to.equal(`${bin}:/usr/bin:/bin`);
  });

  function zshEnv(theirs: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
    const place = { cityName: 'a', cityRoot: dir, env: { PATH: process.env.PATH, HOME: join(dir, 'home'), ...theirs } };
    return {
      ...sessionEnvironment(place, record, resolveProviders({}, {}, 'city.toml').get('claude')!, { dir }),
      CTL_BEAD: 'stale-1',
    };
  }
  const zsh = (env: NodeJS.ProcessEnv, ...args: string[]) =>
    execFileSync('zsh', args, { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

  it('every zsh (plain, login, interactive, and one it starts) reads the bead held at that moment', function () {
    if (!hasZsh) this.skip(); // zsh is a Debian package CI installs; a machine without it has no zsh users
    const home = join(dir, 'home');
    mkdirSync(home);
    writeFileSync(join(home, '.zshenv'), 'THEIRS=env\n');
    writeFileSync(join(home, '.zprofile'), 'THEIRS="$THEIRS+profile"\n');
    writeFileSync(join(home, '.zshrc'), 'THEIRS="$THEIRS+rc"\n');
    const env = zshEnv({});
    expect(env.ZDOTDIR).to.equal(join(dir, 'zsh'));
    const show = 'echo "${CTL_BEAD-unset} $THEIRS"';
    writeHeldBead(dir, 'alp-3');
    expect(zsh(env, '-c', show)).to.equal('alp-3 env');
    expect(zsh(env, '-l', '-c', show)).to.equal('alp-3 env+profile');
    expect(zsh(env, '-i', '-c', show)).to.equal('alp-3 env+rc');
    writeHeldBead(dir, 'alp-4');
    // A script the tool runs starts a zsh of its own: ours still comes first.
    expect(zsh(env, '-c', `zsh -c '${show}'`)).to.equal('alp-4 env');
    writeHeldBead(dir, undefined);
    expect(zsh(env, '-c', show)).to.equal('unset env');
  });

  it("zsh reads the person's own ZDOTDIR, and where their .zshenv moves it", function () {
    if (!hasZsh) this.skip(); // as above
    const theirs = join(dir, 'theirs');
    const moved = join(dir, 'moved');
    mkdirSync(theirs);
    mkdirSync(moved);
    writeFileSync(join(theirs, '.zshenv'), `THEIRS=env; ZDOTDIR=${moved}\n`);
    writeFileSync(join(theirs, '.zshrc'), 'THEIRS="$THEIRS+wrong-rc"\n');
    writeFileSync(join(moved, '.zshrc'), 'THEIRS="$THEIRS+moved-rc"\n');
    const env = zshEnv({ ZDOTDIR: theirs });
    writeHeldBead(dir, 'alp-5');
    expect(zsh(env, '-i', '-c', 'echo "$CTL_BEAD $THEIRS"')).to.equal('alp-5 env+moved-rc');
  });
});
