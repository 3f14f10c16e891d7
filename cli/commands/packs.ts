import { resolve } from 'node:path';
import type { PackCommandResponse } from '../../shared/dto/pack-commands.js';
import type { PackResponse } from '../../shared/dto/packs.js';
import { call, CSRF } from '../_api.js';
import { command, group } from '../_command.js';
import { inCityFlags } from '../_flags.js';
import { json, line, table } from '../_output.js';
import { cityPath, inCity } from '../_scope.js';
import { packCommands } from './pack-run.js';

const list = command({
  name: 'list',
  description: 'The packs the city imports: source, pinned commit, the agents each brings',
  examples: ['ctl pack list', 'ctl pack list --json'],
  args: { ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(api, api.client.GET('/v0/city/{cityName}/packs', { params: { path: cityPath(city) } }));
    if (a.json) return json(data);
    if (data.packs.length === 0) return line('No packs (ctl pack add SOURCE).');
    table<PackResponse>(
      [
        { header: 'NAME', value: (p) => p.name, kind: 'id' },
        { header: 'SOURCE', value: (p) => p.source + (p.version ? `@${p.version}` : '') },
        { header: 'COMMIT', value: (p) => (p.error ? `left out: ${p.error}` : (p.commit?.slice(0, 12) ?? 'local')) },
        { header: 'AGENTS', value: (p) => p.agents.join(', ') || '-', kind: 'text' },
        { header: 'DESCRIPTION', value: (p) => p.description ?? '-', kind: 'text' },
      ],
      data.packs,
    );
  },
});

const add = command({
  name: 'add',
  description: 'Import a pack: a git repository (fetched, its commit pinned in packs.lock) or a directory',
  examples: [
    'ctl pack add https://example.com/packs/review.git',
    'ctl pack add https://example.com/packs.git//review --name review --version ^1.2.0',
    'ctl pack add ../shared-packs/ops',
  ],
  args: {
    source: { type: 'positional', description: 'A git URL (optional //subdir) or a directory', required: true },
    name: { type: 'string', description: 'Its binding (default: from the source)' },
    version: { type: 'string', description: 'A branch, tag, sha:<commit> or semver range', valueHint: 'REF' },
    ...inCityFlags,
  },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    // A directory typed here is relative to where it is typed, not to the city.
    const local = !/^[a-z]+:\/\/|^[\w.-]+@[\w.-]+:/.test(a.source);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/packs', {
        params: { header: CSRF, path: cityPath(city) },
        body: {
          source: local ? resolve(a.source) : a.source,
          ...(a.name ? { name: a.name } : {}),
          ...(a.version ? { version: a.version } : {}),
        },
      }),
    );
    if (a.json) return json(data);
    const at = data.commit ? ` at ${data.commit.slice(0, 12)}` : '';
    const agents = `${data.agents.length} agent${data.agents.length === 1 ? '' : 's'}`;
    line(
      `Added pack ${data.name} (${data.source}${at}): ${agents}${data.agents.length ? `: ${data.agents.join(', ')}` : ''}`,
    );
  },
});

const remove = command({
  name: 'remove',
  description: 'Remove an import (its agents stop; the machine’s cache keeps its content)',
  examples: ['ctl pack remove review'],
  args: { name: { type: 'positional', description: 'The binding', required: true }, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.DELETE('/v0/city/{cityName}/packs/{name}', {
        params: { header: CSRF, path: { ...cityPath(city), name: a.name } },
      }),
    );
    if (a.json) return json(data);
    line(`Removed pack ${a.name}`);
  },
});

const commands = command({
  name: 'commands',
  description: 'The commands the city’s packs offer, each run as ctl BINDING COMMAND [ARGS…]',
  examples: ['ctl pack commands', 'ctl dolt list            # run one'],
  args: { ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const items = await packCommands(api, city);
    if (a.json) return json({ items, total: items.length });
    if (items.length === 0) return line('No pack commands.');
    table<PackCommandResponse>(
      [
        { header: 'RUN AS', value: (c) => `ctl ${c.binding} ${c.command}`, kind: 'id' },
        { header: 'PACK', value: (c) => c.pack },
        { header: 'DESCRIPTION', value: (c) => c.description ?? '-', kind: 'text' },
      ],
      items,
    );
  },
});

export const packCommand = group({
  name: 'pack',
  description: 'Packs: bundles of agents, formulas, orders and commands a city imports',
  examples: [
    'ctl pack add https://example.com/packs/review.git',
    'ctl pack list',
    'ctl pack commands',
    'ctl pack remove review',
  ],
  commands: { list, add, remove, commands },
});
