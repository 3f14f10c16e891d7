import { connect } from '../_api.js';
import { command } from '../_command.js';
import { CliError } from '../_errors.js';
import { apiFlag, cityFlag, refuseTogether } from '../_flags.js';
import { resolveCity } from '../_scope.js';

export const topCommand = command({
  name: 'top',
  description:
    'A live full-screen view of a city (or every city): sessions waiting on you first, agents, recent events; keys to allow, deny, attach, open',
  examples: [
    'ctl top                # the city you are in, else every city',
    'ctl top --city alpha',
    'ctl top --all          # every city, even inside a city directory',
  ],
  args: {
    all: { type: 'boolean', description: 'Every city, even inside a city directory or with CTL_CITY set' },
    ...cityFlag,
    ...apiFlag,
  },
  async run({ args: a }) {
    refuseTogether(a, [['all', 'city']]);
    if (!process.stdin.isTTY || !process.stdout.isTTY) {
      throw new CliError('top needs a terminal (stdin and stdout); "ctl events --follow" streams to a pipe');
    }
    const api = connect(a.api);
    const city = a.all ? undefined : await resolveCity(api, a.city);
    // The terminal UI library (Ink, with React) is loaded only here: no other command pays for it.
    const { runTop } = await import('../top/app.js');
    await runTop(api, city);
  },
});
