import type { AnnotatedAgentResponse, ConfigIssue } from '../../shared/dto/config.js';
import { call } from '../_api.js';
import { command, group } from '../_command.js';
import { CliError } from '../_errors.js';
import { inCityFlags } from '../_flags.js';
import { fields, json, line, table } from '../_output.js';
import { cityPath, inCity } from '../_scope.js';

const show = command({
  name: 'show',
  description: 'The city’s configuration as composed and in use: workspace, agents, rigs, services, packs',
  examples: ['ctl config show', 'ctl config show --defaults', 'ctl config show --json'],
  args: {
    defaults: { type: 'boolean', description: 'What a city of this name has before its files say anything' },
    ...inCityFlags,
  },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const params = { params: { path: cityPath(city) } };
    const { data } = a.defaults
      ? await call(api, api.client.GET('/v0/city/{cityName}/config/defaults', params))
      : await call(api, api.client.GET('/v0/city/{cityName}/config', params));
    if (a.json) return json(data);
    fields([
      ['City', data.workspace.name],
      ['Prefix', data.workspace.prefix],
      ['Provider', data.workspace.provider],
      ['Suspended', data.workspace.suspended ? 'yes' : 'no'],
      ['Agents', data.agents.map((x) => x.name).join(', ') || '-'],
      ['Rigs', data.rigs.map((r) => r.name).join(', ') || '-'],
      ['Providers', Object.keys(data.providers).sort().join(', ') || '-'],
      ['Services', data.services.map((s) => s.name).join(', ') || '-'],
      ['Packs', data.packs.map((p) => (p.error ? `${p.binding} (left out)` : p.binding)).join(', ') || '-'],
      [
        'Patches',
        `${data.patches.agent_count} agent, ${data.patches.provider_count} provider, ${data.patches.rig_count} rig`,
      ],
    ]);
  },
});

const explain = command({
  name: 'explain',
  description:
    'Where each agent and provider comes from: the city’s own files, a pack, a built-in preset; patched or not',
  examples: ['ctl config explain', 'ctl config explain --json'],
  args: { ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/config/explain', { params: { path: cityPath(city) } }),
    );
    if (a.json) return json(data);
    table<AnnotatedAgentResponse>(
      [
        { header: 'AGENT', value: (x) => x.name, kind: 'id' },
        { header: 'ORIGIN', value: (x) => x.origin },
        { header: 'PROVIDER', value: (x) => x.provider ?? '-' },
        { header: 'PATCHED', value: (x) => (x.patched ? 'yes' : '-') },
        { header: 'SOURCE', value: (x) => x.source, kind: 'text' },
      ],
      data.agents,
    );
    line('');
    table<[string, { origin: string; patched: boolean; command?: string }]>(
      [
        { header: 'PROVIDER', value: ([name]) => name, kind: 'id' },
        { header: 'ORIGIN', value: ([, p]) => p.origin },
        { header: 'PATCHED', value: ([, p]) => (p.patched ? 'yes' : '-') },
        { header: 'COMMAND', value: ([, p]) => p.command ?? '-', kind: 'text' },
      ],
      Object.entries(data.providers).sort(([x], [y]) => (x < y ? -1 : 1)),
    );
  },
});

const validate = command({
  name: 'validate',
  description: 'Check the configuration as it is on disk now; exits 1 when it has errors',
  examples: ['ctl config validate'],
  args: { ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/config/validate', { params: { path: cityPath(city) } }),
    );
    const where = (i: ConfigIssue) => `${i.file}${i.key ? ` (${i.key})` : ''}`;
    if (!data.valid) {
      // One line, as every failure: the first error, and how many more `--json` lists.
      const [first] = data.errors;
      const more = data.errors.length > 1 ? ` (and ${data.errors.length - 1} more: ctl config validate --json)` : '';
      throw new CliError(`not valid: ${where(first)}: ${first.message}${more}`);
    }
    if (a.json) return json(data);
    line(`valid (${data.warnings.length} warning${data.warnings.length === 1 ? '' : 's'})`);
    for (const w of data.warnings) line(`  warning ${where(w)}: ${w.message}`);
  },
});

export const configCommand = group({
  name: 'config',
  description: 'The city’s configuration: composed, explained, validated',
  examples: ['ctl config show', 'ctl config explain', 'ctl config validate'],
  commands: { show, explain, validate },
});
