import type { AnnotatedAgentResponse, ConfigIssue } from '../../shared/dto/config.js';
import { call } from '../_api.js';
import { command, group } from '../_command.js';
import { inCityFlags } from '../_flags.js';
import { stringify } from 'smol-toml';
import { json, line, table } from '../_output.js';
import { cityPath, inCity } from '../_scope.js';

/** A JSON value TOML can hold: TOML has no null, so a null field is left out, as an absent key. */
function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.filter((v) => v !== null).map(withoutNulls);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => v !== null && v !== undefined)
        .map(([k, v]) => [k, withoutNulls(v)]),
    );
  }
  return value;
}

const show = command({
  name: 'show',
  description: 'The city’s configuration as composed and in use, as TOML: workspace, agents, rigs, services, packs',
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
    // The whole composed configuration, as TOML: what a person would write to get it (the API's answer whole).
    process.stdout.write(stringify(withoutNulls(data)));
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
    // Which definition of a name won, when a fallback was left out for another.
    for (const agent of data.agents) {
      for (const r of agent.replaced ?? []) line(`${agent.name}: ${agent.source} replaces ${r.source} (${r.reason})`);
    }
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
    // As `ctl formula validate`: the report on stdout (the API's answer with --json), exit status 1 when not valid.
    if (!data.valid) process.exitCode = 1;
    if (a.json) return json(data);
    const where = (i: ConfigIssue) => `${i.file}${i.key ? ` (${i.key})` : ''}`;
    const count = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;
    line(
      data.valid
        ? `valid (${count(data.warnings.length, 'warning')})`
        : `not valid: ${count(data.errors.length, 'error')}, ${count(data.warnings.length, 'warning')}`,
    );
    for (const e of data.errors) {
      // A syntax error's message already says file:line:column; its excerpt shows the line and where in it.
      line(`  error ${e.line !== undefined ? '' : `${where(e)}: `}${e.message}`);
      if (e.excerpt) for (const l of e.excerpt.split('\n')) line(`    ${l}`);
    }
    for (const w of data.warnings) line(`  warning ${where(w)}: ${w.message}`);
  },
});

export const configCommand = group({
  name: 'config',
  description: 'The city’s configuration: composed, explained, validated',
  examples: ['ctl config show', 'ctl config explain', 'ctl config validate'],
  commands: { show, explain, validate },
});
