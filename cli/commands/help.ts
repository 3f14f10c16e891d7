import { VERSION } from '../../shared/version.js';
import { command } from '../_command.js';
import { CliError, UnknownCommand } from '../_errors.js';
import { jsonFlag } from '../_flags.js';
import { json, line } from '../_output.js';
import { findCommand } from '../_tree.js';
import { usage } from '../_usage.js';

export const helpCommand = command({
  name: 'help',
  description: 'Show how to use ctl, or a command (the same as COMMAND --help)',
  examples: ['ctl help', 'ctl help bead create   # the same as: ctl bead create --help'],
  args: { command: { type: 'positional', description: 'A command, e.g. bead create', required: false } },
  variadic: true,
  async run({ args, rest }) {
    const words = args.command === undefined ? [] : [args.command, ...rest];
    let found;
    try {
      found = await findCommand(words);
    } catch (err) {
      if (err instanceof UnknownCommand) throw new CliError(err.message); // said by `ctl help`
      throw err;
    }
    if (found.rest.length) throw new CliError(`no command "${words.join(' ')}"; see "ctl --help"`);
    process.stdout.write(await usage(found.cmd, found.path));
  },
});

export const versionCommand = command({
  name: 'version',
  description: 'Print the version of ctl (the same as --version)',
  examples: ['ctl version', 'ctl version --json   # {"version":"…","node":"v24…"}: ctl and the Node it runs on'],
  args: { ...jsonFlag },
  run({ args }) {
    if (args.json) return json({ version: VERSION, node: process.version });
    line(VERSION);
  },
});
