import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import { parseCityConfig } from '../../shared/config/city-config.js';
import { Problem } from '../../shared/http/problem.js';
import { CommandRunner } from '../../controller/commands.js';
import { composeConfig } from '../../controller/config/compose.js';
import { PackCommands } from '../../controller/packs/pack-command-runner.js';

// A command whose script is a link leading out of its pack (decision: such files are skipped with a warning,
// never read): left out of the list, named by validate (`skipped`), and not run — one check for all three.
describe('pack commands whose files lead out of the pack', function () {
  let root: string;
  let commands: CommandRunner;
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  };
  beforeEach(function () {
    root = mkdtempSync(join(tmpdir(), 'ctl-cmd-links-'));
    commands = new CommandRunner();
  });
  afterEach(function () {
    commands.stop();
    rmSync(root, { recursive: true, force: true });
  });

  const cityOf = () => {
    const composed = composeConfig(
      join(root, 'city'),
      parseCityConfig('[imports.tools]\nsource = "./packs/tools"\n', 'city.toml'),
      { cacheRoot: join(root, 'cache') },
    );
    return { composed, runner: new PackCommands({ name: 'c', root: join(root, 'city'), composed, commands }) };
  };

  beforeEach(function () {
    write('outside/steal.sh', 'echo STOLEN\n');
    write(
      'city/packs/tools/pack.toml',
      '[pack]\nname = "tools"\n[[commands]]\nname = "leak"\nscript = "scripts/leak.sh"\n' +
        '[[commands]]\nname = "helpful"\nscript = "scripts/ok.sh"\nlong_description = "help.md"\n',
    );
    write('city/packs/tools/scripts/ok.sh', 'echo ok\n');
    symlinkSync(join(root, 'outside', 'steal.sh'), join(root, 'city/packs/tools/scripts/leak.sh'));
    symlinkSync('../../../outside/steal.sh', join(root, 'city/packs/tools/help.md'));
    write('city/packs/tools/commands/fine/run.sh', 'echo fine\n');
    mkdirSync(join(root, 'city/packs/tools/commands/escape'), { recursive: true });
    symlinkSync(join(root, 'outside', 'steal.sh'), join(root, 'city/packs/tools/commands/escape/run.sh'));
  });

  it('are left out of the list and named as skipped, and running one is a 404', async function () {
    const { composed, runner } = cityOf();
    expect(composed.problems).to.deep.equal([]);
    expect(runner.list().map((c) => c.command)).to.deep.equal(['fine']);
    expect(composed.skipped.map((s) => s.file).sort()).to.deep.equal([
      'pack:tools/commands/escape/run.sh',
      'pack:tools/help.md',
      'pack:tools/scripts/leak.sh',
    ]);
    for (const s of composed.skipped)
      expect(s.message).to.match(/leading out of the pack: skipped, not read \(command/);
    for (const argv of [['leak'], ['escape'], ['helpful']]) {
      const refused = await runner.run({ binding: 'tools', argv }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(refused, argv[0]).to.be.instanceOf(Problem);
      expect((refused as Problem).message).to.match(/^not_found: tools has no command/);
    }
    expect((await runner.run({ binding: 'tools', argv: ['fine'] })).output).to.equal('fine\n');
  });

  it('a link made after the pack was read is refused by the same check', async function () {
    const { runner } = cityOf();
    rmSync(join(root, 'city/packs/tools/commands/fine/run.sh'));
    symlinkSync(join(root, 'outside', 'steal.sh'), join(root, 'city/packs/tools/commands/fine/run.sh'));
    const refused = await runner.run({ binding: 'tools', argv: ['fine'] }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect((refused as Problem).message).to.equal(
      'not_found: commands/fine/run.sh: a symbolic link leading out of the pack: skipped, not read',
    );
  });
});
