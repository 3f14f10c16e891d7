import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { findOnPath } from '../shared/readiness.js';
import { VERSION } from '../shared/version.js';
import { walkTree } from '../cli/_tree.js';
import { usage } from '../cli/_usage.js';
import { expectFailure, expectSuccess, runCtl } from './helpers/cli.js';
import { TestSupervisor } from './helpers/supervisor.js';

// Finding one's way: `ctl help`, `ctl version`, suggestions for what was mistyped, examples in every --help, global
// flags before the command, and shell completion generated from the command tree. Run as the real built binary;
// the tree itself is walked in-process (the same modules the binary loads).

describe('ctl help, version, suggestions, examples, global flags and completion', function () {
  this.timeout(60_000);

  describe('ctl help and ctl version', function () {
    it('ctl help prints what ctl --help prints; ctl help COMMAND… what COMMAND… --help prints', async function () {
      expect(expectSuccess(await runCtl(['help']))).to.deep.equal(expectSuccess(await runCtl(['--help'])));
      const create = expectSuccess(await runCtl(['bead', 'create', '--help']));
      expect(create.join('\n')).to.include('ctl bead create');
      expect(expectSuccess(await runCtl(['help', 'bead', 'create']))).to.deep.equal(create);
      expect(expectSuccess(await runCtl(['help', 'city']))).to.deep.equal(expectSuccess(await runCtl(['city'])));
    });

    it('ctl help of an unknown command fails in one line, with a suggestion', async function () {
      expectFailure(await runCtl(['help', 'bead', 'creat']), 'help', 'unknown command "creat"; did you mean "create"?');
      expectFailure(await runCtl(['help', 'cities', 'extra']), 'help', /no command "cities extra"/);
    });

    it('ctl version and ctl --version print the version; ctl version --json an object', async function () {
      expect(expectSuccess(await runCtl(['version']))).to.deep.equal([VERSION]);
      expect(expectSuccess(await runCtl(['--version']))).to.deep.equal([VERSION]);
      expect(JSON.parse(expectSuccess(await runCtl(['version', '--json']))[0])).to.deep.equal({
        version: VERSION,
        node: process.version,
      });
    });

    it('ctl --help lists help, version and completion, and says global flags may come first', async function () {
      const text = expectSuccess(await runCtl(['--help'])).join('\n');
      for (const command of ['help', 'version', 'completion'])
        expect(text).to.match(new RegExp(`^\\s+${command}\\s`, 'm'));
      expect(text).to.include('ctl --city alpha bead list');
    });
  });

  describe('did you mean …', function () {
    it('a mistyped command, subcommand or flag names the nearest one', async function () {
      expectFailure(await runCtl(['beed', 'list']), '', 'unknown command "beed"; did you mean "bead"?');
      expectFailure(await runCtl(['bead', 'lst']), 'bead', 'unknown command "lst"; did you mean "list"?');
      expectFailure(await runCtl(['city', 'strat', 'x']), 'city', 'unknown command "strat"; did you mean "start"?');
      expectFailure(await runCtl(['events', 'rotat']), 'events', 'unknown command "rotat"; did you mean "rotate"?');
      expectFailure(
        await runCtl(['bead', 'list', '--stauts', 'open']),
        'bead list',
        'unknown flag --stauts; did you mean --status?',
      );
    });

    it('nothing near: where to look instead', async function () {
      expectFailure(await runCtl(['frobnicate']), '', 'unknown command "frobnicate"; see "ctl --help"');
      expectFailure(
        await runCtl(['bead', 'frobnicate']),
        'bead',
        'unknown command "frobnicate"; see "ctl bead --help"',
      );
      expectFailure(await runCtl(['cities', '--frobnicate']), 'cities', 'unknown flag --frobnicate');
    });
  });

  describe('examples', function () {
    it('every command and group has an EXAMPLES section in its --help, each example a ctl command line', async function () {
      const missing: string[] = [];
      let commands = 0;
      await walkTree(async (cmd, path) => {
        commands++;
        const text = await usage(cmd, path);
        const section = text.split(/^EXAMPLES$/m)[1];
        const examples = (section ?? '').split('\n').filter((l) => l.trim() !== '');
        if (examples.length === 0 || !examples.every((l) => /^ {2}\S/.test(l) && /(^|[^\w-])ctl( |$)/.test(l))) {
          missing.push(`ctl ${path.join(' ')}`.trim());
        }
      });
      expect(commands, 'the whole tree was walked').to.be.greaterThan(40);
      expect(missing, 'commands whose --help has no examples').to.deep.equal([]);
    });

    it('the binary shows them', async function () {
      const text = expectSuccess(await runCtl(['events', '--help'])).join('\n');
      expect(text).to.match(/^EXAMPLES$/m);
      expect(text).to.include('ctl events --follow --type controller.crashed');
    });
  });

  describe('global flags before the command', function () {
    let sup: TestSupervisor;

    before(async function () {
      sup = await TestSupervisor.start();
      await sup.createCity('alpha');
    });

    after(async function () {
      if (sup) await sup.cleanup();
    });

    const run = (args: string[]) => runCtl(args, { env: { ...sup.env, CTL_API: undefined, CTL_CITY: undefined } });

    it('ctl --api URL --json cities is ctl cities --json --api URL', async function () {
      const after = expectSuccess(await run(['cities', '--json', '--api', sup.base]));
      expect(JSON.parse(after[0])).to.include({ total: 1 });
      expect(expectSuccess(await run(['--api', sup.base, '--json', 'cities']))).to.deep.equal(after);
      expect(expectSuccess(await run(['--api=' + sup.base, 'cities', '--json']))).to.deep.equal(after);
    });

    it('ctl --city alpha bead list, and between a group and its command', async function () {
      const api = ['--api', sup.base];
      expectSuccess(await run(['bead', 'create', 'Global', '--city', 'alpha', ...api]));
      const after = expectSuccess(await run(['bead', 'list', '--city', 'alpha', ...api]));
      expect(after.join('\n')).to.include('Global');
      expect(expectSuccess(await run(['--city', 'alpha', ...api, 'bead', 'list']))).to.deep.equal(after);
      expect(expectSuccess(await run(['bead', '--city', 'alpha', 'list', ...api]))).to.deep.equal(after);
      expect(expectSuccess(await run(['--city=alpha', '--json', ...api, 'bead', 'list']))[0]).to.match(/^\{"items":/);
    });

    it('a global flag a command does not take is refused by that command', async function () {
      expectFailure(await run(['--city', 'alpha', 'version']), 'version', 'unknown flag --city');
    });
  });

  describe('ctl completion', function () {
    let dir: string;

    before(function () {
      dir = mkdtempSync(join(tmpdir(), 'ctl-completion-'));
    });

    after(function () {
      rmSync(dir, { recursive: true, force: true });
    });

    /** What bash's completion function offers for a command line typed so far (the last word being completed). */
    function bashComplete(script: string, line: string): string[] {
      const words = line.split(' ');
      const program = `source ${JSON.stringify(script)}; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${
        words.length - 1
      }; _ctl; printf '%s\\n' "\${COMPREPLY[@]}"`;
      return execFileSync('bash', ['-c', program], { encoding: 'utf8' }).split('\n').filter(Boolean);
    }

    it('bash: completes commands, subcommands and flags from the command tree', async function () {
      const script = join(dir, 'ctl.bash');
      writeFileSync(script, expectSuccess(await runCtl(['completion', 'bash'])).join('\n') + '\n');
      expect(bashComplete(script, 'ctl bead cr')).to.deep.equal(['create']);
      expect(bashComplete(script, 'ctl bead dep ')).to.deep.equal(['add', 'remove', 'list']);
      expect(bashComplete(script, 'ctl ev')).to.deep.equal(['events']);
      expect(bashComplete(script, 'ctl events ro')).to.deep.equal(['rotate']);
      expect(bashComplete(script, 'ctl bead create --pri')).to.deep.equal(['--priority']);
      expect(bashComplete(script, 'ctl events --fo')).to.deep.equal(['--follow']);
      // Global flags and their values before the command are skipped; a flag's value is left to the shell.
      expect(bashComplete(script, 'ctl --city bead bead li')).to.deep.equal(['list']);
      expect(bashComplete(script, 'ctl bead list --city ')).to.deep.equal([]);
      // A leaf command offers its flags.
      expect(bashComplete(script, 'ctl cities ')).to.include('--json');
    });

    it('zsh and fish: scripts naming every command; where the shell is installed, it reads them and completes', async function () {
      const scripts: Record<string, string> = {};
      for (const shell of ['zsh', 'fish']) {
        const text = expectSuccess(await runCtl(['completion', shell])).join('\n');
        for (const word of ['bead', 'convoy', 'rotate', '--payload-match', '--start-command']) {
          expect(text, `${shell} script mentions ${word}`).to.include(word);
        }
        scripts[shell] = join(dir, `ctl.${shell}`);
        writeFileSync(scripts[shell], text + '\n');
      }
      if (findOnPath('zsh', process.env.PATH ?? '')) {
        execFileSync('zsh', ['-n', scripts.zsh]);
        // Outside a completion widget: compadd and _files stand in, printing what would be offered.
        const offered = (words: string[]) =>
          execFileSync(
            'zsh',
            [
              '-c',
              `compadd() { shift; print -l -- "$@" }; _files() { print FILES }; source ${scripts.zsh}; ` +
                `words=(${words.map((w) => `'${w}'`).join(' ')}); CURRENT=${words.length}; _ctl`,
            ],
            { encoding: 'utf8' },
          )
            .split('\n')
            .filter(Boolean);
        expect(offered(['ctl', '--city', 'x', 'bead', 'l'])).to.include.members(['list', 'create', 'dep']);
        expect(offered(['ctl', 'bead', 'create', '--pri'])).to.include('--priority');
        expect(offered(['ctl', 'bead', 'list', '--city', ''])).to.deep.equal(['FILES']);
      }
      if (findOnPath('fish', process.env.PATH ?? '')) {
        execFileSync('fish', ['-n', scripts.fish]);
        const offered = (line: string) =>
          execFileSync('fish', ['-c', `source ${scripts.fish}; complete -C'${line}'`], { encoding: 'utf8' })
            .split('\n')
            .filter(Boolean)
            .map((l) => l.split('\t')[0]);
        expect(offered('ctl bead cr')).to.deep.equal(['create']);
        expect(offered('ctl --city x bead l')).to.deep.equal(['list']);
        expect(offered('ctl bead create --pri')).to.deep.equal(['--priority']);
      }
    });

    it('an unknown shell fails in one line', async function () {
      expectFailure(await runCtl(['completion', 'tcsh']), 'completion', /expected bash, zsh or fish/);
    });
  });
});
