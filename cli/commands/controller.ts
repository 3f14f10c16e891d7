import { resolve } from 'node:path';
import { readCityConfig } from '../../shared/config/city-config.js';
import { ConfigError } from '../../shared/config/config-error.js';
import type { ControllerMessage } from '../../shared/controller-ipc.js';
import { cityPaths } from '../../shared/paths.js';
import type { ControllerRunOptions, ProgramEntry } from '../../shared/run-options.js';
import { command, group } from '../_command.js';
import { CliError } from '../_errors.js';

/** A supervisor that started us learns why we stop over its channel, as it would from the controller itself. */
function reportFailure(error: string): Promise<void> {
  return new Promise((done) => {
    if (!process.send || !process.connected) return done();
    const message: ControllerMessage = { kind: 'failed', error };
    process.send(message, () => done());
  });
}

const run = command({
  name: 'run',
  description: "Run one city's controller in the foreground (what the supervisor runs)",
  examples: ['ctl controller run --city ~/cities/alpha --listen 9443   # its API on 127.0.0.1:9443, for debugging'],
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
    // What a person gets wrong, said in one line before the controller starts (and logs, and writes .ctl/).
    try {
      readCityConfig(cityPaths(resolve(args.city)).config);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      await reportFailure(err.message);
      throw new CliError(err.message);
    }
    // A literal path, so that the bundler (tools/build/bundle.mjs) follows it: the program is a chunk of ctl.
    const entry = (await import('../../controller/main.js')) as ProgramEntry<ControllerRunOptions>;
    try {
      await entry.run({ city: args.city, name: args.name, listen: args.listen });
    } catch (err) {
      throw new CliError((err as Error).message);
    }
  },
});

export const controllerCommand = group({
  name: 'controller',
  description: 'Per-city controller',
  examples: ['ctl controller run --city ~/cities/alpha --listen 9443'],
  commands: { run },
});
