import { defineCommand } from 'citty';
import type { ControllerRunOptions, ProgramEntry } from '../../shared/run-options.js';
import { CliError, leafCommand } from '../_command.js';

const run = leafCommand('controller run', {
  meta: { name: 'run', description: "Run one city's controller in the foreground (what the supervisor runs)" },
  args: {
    city: { type: 'string', description: 'City directory (holding city.toml)', required: true, valueHint: 'DIR' },
    name: { type: 'string', description: 'Name to serve the city under (default: its declared name)' },
    listen: {
      type: 'string',
      description: 'Unix socket path, or TCP port on 127.0.0.1 (default: <city>/.ctl/controller.sock)',
      valueHint: 'PATH|PORT',
    },
  },
  async run({ args }) {
    if (args.listen !== undefined && /^\d+$/.test(args.listen) && Number(args.listen) > 65535) {
      throw new CliError(`--listen ${args.listen}: not a port`);
    }
    const entry = (await import(
      new URL('../../controller/main.js', import.meta.url).href
    )) as ProgramEntry<ControllerRunOptions>;
    await entry.run({ city: args.city, name: args.name, listen: args.listen });
  },
});

export const controllerCommand = defineCommand({
  meta: { name: 'controller', description: 'Per-city controller' },
  subCommands: { run },
});
