import { command } from '../_command.js';
import { apiFlag, cityFlag } from '../_flags.js';
import { cityPath, inCity, listCities } from '../_scope.js';
import { connect, call } from '../_api.js';
import type { Api, NameKind } from '../_types.js';
import type { CityInfo } from '../../shared/dto/cities.js';

// `ctl completion names KIND`: what the shell completion scripts offer for a city, agent, session, bead or
// formula, asked of the running supervisor. A completion must never hang a prompt nor print an error into it:
// each request is bounded (300 ms unless CTL_CONNECT_TIMEOUT / CTL_TIMEOUT say otherwise), and any failure
// (the supervisor down, no city in scope) prints nothing.

const KINDS: NameKind[] = ['cities', 'agents', 'sessions', 'beads', 'formulas', 'hosts'];
const QUICK = '300ms';

async function inCityNames(api: Api, city: CityInfo, kind: NameKind): Promise<string[]> {
  const path = cityPath(city);
  switch (kind) {
    case 'agents': {
      const { data } = await call(api, api.client.GET('/v0/city/{cityName}/agents', { params: { path } }));
      return data.items.map((a) => a.name);
    }
    case 'sessions': {
      const { data } = await call(api, api.client.GET('/v0/city/{cityName}/sessions', { params: { path } }));
      return data.items.flatMap((s) => [s.id, ...(s.alias ? [s.alias] : [])]);
    }
    case 'beads': {
      const query = { exclude_type: 'session', limit: 200 };
      const { data } = await call(api, api.client.GET('/v0/city/{cityName}/beads', { params: { path, query } }));
      return data.items.map((b) => b.id);
    }
    case 'formulas': {
      const { data } = await call(api, api.client.GET('/v0/city/{cityName}/formulas', { params: { path } }));
      return data.items.map((f) => f.name);
    }
    case 'hosts': {
      const { data } = await call(api, api.client.GET('/v0/city/{cityName}/hosts', { params: { path } }));
      return data.items.map((h) => h.name);
    }
    default:
      return [];
  }
}

export const namesCommand = command({
  name: 'names',
  description: 'The names shell completion offers (cities, agents, sessions, beads, formulas, hosts), one a line',
  examples: ['ctl completion names cities', 'ctl completion names agents --city alpha'],
  args: {
    kind: { type: 'positional', description: KINDS.join(', '), required: true, valueHint: 'KIND' },
    ...cityFlag,
    ...apiFlag,
  },
  async run({ args: a }) {
    process.env.CTL_CONNECT_TIMEOUT ||= QUICK;
    process.env.CTL_TIMEOUT ||= QUICK;
    const kind = a.kind as NameKind;
    if (!KINDS.includes(kind)) return;
    let names: string[];
    try {
      if (kind === 'cities') names = (await listCities(connect(a.api))).map((c) => c.name);
      else {
        const { api, city } = await inCity(a);
        names = await inCityNames(api, city, kind);
      }
    } catch {
      // Nothing to offer: the shell falls back to its own completion, and the prompt stays clean.
      return;
    }
    if (names.length) process.stdout.write(`${names.join('\n')}\n`);
  },
});
