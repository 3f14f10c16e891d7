import type { WebhookView } from '../../shared/dto/webhooks.js';
import { call } from '../_api.js';
import { command, group } from '../_command.js';
import { CliError } from '../_errors.js';
import { inCityFlags } from '../_flags.js';
import { json, line, table } from '../_output.js';
import { cityPath, inCity } from '../_scope.js';

/** A webhook's `[[webhook]]` tables, as the city took them (a broken one is not listed: validate names it). */
async function _webhooks(a: Parameters<typeof inCity>[0]): Promise<{ city: string; webhooks: WebhookView[] }> {
  const { api, city } = await inCity(a);
  const { data } = await call(
    api,
    api.client.GET('/v0/city/{cityName}/webhooks', { params: { path: cityPath(city) } }),
  );
  return { city: city.name, webhooks: data.webhooks };
}

const _limit = (w: WebhookView) => `${w.rate_limit.per_minute}/min (burst ${w.rate_limit.burst})`;

const list = command({
  name: 'list',
  description: 'The city’s [[webhook]] tables: where each takes deliveries, how they are verified, what fires',
  examples: ['ctl webhook list', 'ctl webhook list --json'],
  args: { ...inCityFlags },
  async run({ args: a }) {
    const { webhooks } = await _webhooks(a);
    if (a.json) return json({ webhooks });
    if (webhooks.length === 0)
      return line('No webhooks (declare a [[webhook]] in city.toml; ctl config validate names a broken one).');
    table<WebhookView>(
      [
        { header: 'NAME', value: (w) => w.name, kind: 'id' },
        { header: 'PATH', value: (w) => w.path },
        { header: 'SCHEME', value: (w) => w.scheme },
        { header: 'RULES', value: (w) => String(w.rules.length) },
        { header: 'LIMIT', value: _limit },
      ],
      webhooks,
    );
  },
});

const show = command({
  name: 'show',
  description: 'One webhook: its verification (secrets by the variable that holds them), limits and rules',
  examples: ['ctl webhook show github', 'ctl webhook show github --json'],
  args: {
    name: { type: 'positional', description: 'The [[webhook]]’s name', required: true },
    ...inCityFlags,
  },
  async run({ args: a }) {
    const { city, webhooks } = await _webhooks(a);
    const hook = webhooks.find((w) => w.name === a.name);
    if (!hook)
      throw new CliError(
        `no webhook named ${a.name} in ${city}` +
          (webhooks.length ? ` (it has ${webhooks.map((w) => w.name).join(', ')})` : ' (it has none)'),
      );
    if (a.json) return json(hook);
    line(`Webhook ${hook.name}: POST ${hook.path} (on the webhook listener)`);
    line(`  Scope:     ${hook.scope}${hook.rig ? ` (rig ${hook.rig})` : ''}`);
    line(`  Verified:  ${hook.scheme}${hook.secret_env ? `, secret in ${hook.secret_env}` : ''}`);
    if (hook.bearer_env) line(`  Bearer:    token in ${hook.bearer_env}`);
    if (hook.jwt_policy)
      line(
        `  JWT:       issuer ${hook.jwt_policy.issuer}, audience ${hook.jwt_policy.audience}, keys ${hook.jwt_policy.jwks_url}`,
      );
    line(`  Sources:   ${hook.allowed_cidrs.length ? hook.allowed_cidrs.join(', ') : 'any'}`);
    line(`  Limit:     ${_limit(hook)}`);
    if (hook.dedup_header) line(`  Dedupe by: ${hook.dedup_header}`);
    if (hook.rules.length === 0) return line('  Rules:     none (authentic deliveries fire nothing)');
    line('  Rules:');
    for (const [i, rule] of hook.rules.entries()) {
      const match = Object.entries(rule.match).map(([path, value]) => `${path}=${value}`);
      line(
        `    ${i}. ${rule.event}${match.length ? ` where ${match.join(', ')}` : ''} → ${rule.order}${rule.rig ? ` (rig ${rule.rig})` : ''}`,
      );
    }
  },
});

export const webhookCommand = group({
  name: 'webhook',
  description: 'Webhooks: the [[webhook]] tables a city takes deliveries for, and the orders they fire',
  examples: ['ctl webhook list', 'ctl webhook show github'],
  commands: { list, show },
});
