import type { ProviderResponse } from '../../shared/dto/providers.js';
import { call } from '../_api.js';
import { command, group } from '../_command.js';
import { inCityFlags, limitFlag, listLimit } from '../_flags.js';
import { fields, json, line, noteMore, table } from '../_output.js';
import { collectPages } from '../_pages.js';
import { cityPath, inCity } from '../_scope.js';
import type { Column } from '../_types.js';

const PROVIDER_COLUMNS: Column<ProviderResponse>[] = [
  { header: 'NAME', value: (p) => p.name, kind: 'id' },
  { header: 'ORIGIN', value: (p) => p.origin },
  { header: 'PROTOCOL', value: (p) => p.protocol },
  { header: 'RUNTIME', value: (p) => p.runtime },
  { header: 'COMMAND', value: (p) => [p.command, ...p.args].join(' '), kind: 'text' },
];

const list = command({
  name: 'list',
  description: 'The providers sessions can start: built-in presets, the city’s own, and default for its start command',
  examples: ['ctl provider list', 'ctl provider list --json'],
  args: { ...limitFlag, ...inCityFlags },
  async run({ args: a }) {
    const limit = listLimit(a.limit);
    const { api, city } = await inCity(a);
    const body = await collectPages(limit, async (size, cursor) => {
      const { data } = await call(
        api,
        api.client.GET('/v0/city/{cityName}/providers', {
          params: { path: cityPath(city), query: { limit: size, ...(cursor ? { cursor } : {}) } },
        }),
      );
      return data;
    });
    if (a.json) return json(body);
    table(PROVIDER_COLUMNS, body.items);
    noteMore(body.items.length, body.total);
  },
});

const show = command({
  name: 'show',
  description: 'One provider as the city resolves it: command, protocol, resume, permission modes',
  examples: ['ctl provider show claude', 'ctl provider show mine --json'],
  args: { name: { type: 'positional', description: 'Provider name', required: true }, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data: p } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/provider/{name}', { params: { path: { ...cityPath(city), name: a.name } } }),
    );
    if (a.json) return json(p);
    fields([
      ['Name', p.name],
      ['Display name', p.display_name],
      ['Origin', p.origin],
      ['Command', [p.command, ...p.args].join(' ')],
      ['Protocol', p.protocol],
      ['Runtime', p.runtime],
      ['Prompt', p.prompt_mode + (p.prompt_flag ? ` (${p.prompt_flag})` : '')],
      ['Resume', p.resume_args?.join(' ')],
      ['Ready marker', p.ready_prompt_prefix],
      ['Ready after', p.ready_prompt_prefix ? undefined : `${p.ready_delay_ms} ms running`],
      ['Turn ends after', p.protocol === 'text' && !p.ready_prompt_prefix ? `${p.quiet_ms} ms quiet` : undefined],
      ['Questions', p.pending_pattern],
      ['Permission modes', Object.keys(p.permission_modes).join(', ') || undefined],
      ['Default mode', p.default_permission_mode],
      [
        'Options',
        Object.entries(p.options_schema)
          .map(([key, o]) => `${key}${o.choices ? ` (${o.choices.join('|')})` : ` (${o.type})`}`)
          .join(', ') || undefined,
      ],
      [
        'Option defaults',
        Object.entries(p.option_defaults)
          .map(([k, v]) => `${k}=${v}`)
          .join(' ') || undefined,
      ],
      ['Environment', Object.keys(p.env).join(', ') || undefined],
    ]);
  },
});

const readiness = command({
  name: 'readiness',
  description: 'Whether each provider’s program is installed and signed in, on the controller’s PATH',
  examples: ['ctl provider readiness', 'ctl provider readiness claude codex', 'ctl provider readiness --fresh --json'],
  args: {
    providers: {
      type: 'positional',
      description: 'Providers to probe (default: every provider of the city)',
      required: false,
    },
    fresh: { type: 'boolean', description: 'Probe again, not from the 2 s cache' },
    ...inCityFlags,
  },
  variadic: true,
  async run({ args: a, rest }) {
    const names = a.providers === undefined ? [] : [a.providers, ...rest];
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/provider-readiness', {
        params: {
          path: cityPath(city),
          query: { ...(names.length ? { providers: names.join(',') } : {}), ...(a.fresh ? { fresh: true } : {}) },
        },
      }),
    );
    if (a.json) return json(data);
    const rows = Object.entries(data.providers).map(([name, p]) => ({ name, ...p }));
    if (rows.length === 0) return line('No providers.');
    table(
      [
        { header: 'PROVIDER', value: (r) => r.name, kind: 'id' },
        { header: 'STATUS', value: (r) => r.status, kind: 'status' },
        { header: 'DETAIL', value: (r) => r.detail ?? '', kind: 'text' },
      ],
      rows,
    );
  },
});

export const providerCommand = group({
  name: 'provider',
  description: 'Providers: how a city starts and speaks with an agent program',
  examples: ['ctl provider list', 'ctl provider show claude', 'ctl provider readiness'],
  commands: { list, show, readiness },
});
