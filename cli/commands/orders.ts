import type { OrderHistoryEntry } from '../../shared/dto/orders.js';
import { call, CSRF } from '../_api.js';
import { command, group } from '../_command.js';
import { CliError } from '../_errors.js';
import { inCityFlags, keyValues } from '../_flags.js';
import { json, line, progress, table } from '../_output.js';
import { cityPath, inCity } from '../_scope.js';

const nameArg = {
  name: { type: 'positional', description: 'Order name (orders/<name>.toml)', required: true },
} as const;

/** What triggers an order, in a few words. */
function when(o: {
  trigger?: string;
  interval?: string;
  schedule?: string;
  tz?: string;
  on?: string;
  check?: string;
}): string {
  switch (o.trigger) {
    case 'cooldown':
      return `every ${o.interval}`;
    case 'cron':
      return `cron ${o.schedule}${o.tz ? ` (${o.tz})` : ''}`;
    case 'event':
      return `on ${o.on}`;
    case 'condition':
      return `when \`${o.check}\``;
    default:
      return o.trigger ?? '-';
  }
}

const list = command({
  name: 'list',
  description: 'The city’s orders: trigger, action, and whether each is enabled',
  examples: ['ctl order list', 'ctl order list --json'],
  args: { ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/orders', { params: { path: cityPath(city) } }),
    );
    if (a.json) return json(data);
    if (data.orders.length === 0 && !data.errors?.length) return line('No orders (write orders/<name>.toml).');
    table<(typeof data.orders)[number]>(
      [
        { header: 'NAME', value: (o) => o.name, kind: 'id' },
        { header: 'ENABLED', value: (o) => (o.enabled ? 'yes' : 'no') },
        { header: 'TRIGGER', value: (o) => when(o) },
        {
          header: 'ACTION',
          value: (o) => (o.exec ? `exec: ${o.exec}` : `formula: ${o.formula}${o.pool ? ` → ${o.pool}` : ''}`),
          kind: 'text',
        },
      ],
      data.orders,
    );
    for (const error of data.errors ?? []) progress(`error: ${error}`);
  },
});

const check = command({
  name: 'check',
  description: 'Whether each order is due now and why, and when it last fired',
  examples: ['ctl order check'],
  args: { ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/orders/check', { params: { path: cityPath(city) } }),
    );
    if (a.json) return json(data);
    table<(typeof data.checks)[number]>(
      [
        { header: 'NAME', value: (c) => c.name, kind: 'id' },
        { header: 'DUE', value: (c) => (c.due ? 'yes' : 'no') },
        { header: 'LAST RUN', value: (c) => (c.last_run ? `${c.last_run} ${c.last_run_outcome ?? ''}`.trim() : '-') },
        { header: 'WHY', value: (c) => c.reason, kind: 'text' },
      ],
      data.checks,
    );
    for (const error of data.errors ?? []) progress(`error: ${error}`);
  },
});

const history = command({
  name: 'history',
  description: 'Firings, newest first, with their outcome; with a tracking bead id, that firing’s output',
  examples: ['ctl order history', 'ctl order history --order nightly', 'ctl order history alp-12'],
  args: {
    bead: { type: 'positional', description: 'A firing’s tracking bead: print its captured output', required: false },
    order: { type: 'string', description: 'Only this order’s firings', valueHint: 'NAME' },
    limit: { type: 'string', description: 'At most this many (default 20)', valueHint: 'N' },
    ...inCityFlags,
  },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    if (a.bead) {
      const { data } = await call(
        api,
        api.client.GET('/v0/city/{cityName}/order/history/{bead_id}', {
          params: { path: { ...cityPath(city), bead_id: a.bead } },
        }),
      );
      if (a.json) return json(data);
      process.stdout.write(data.output);
      return;
    }
    const limit = a.limit === undefined ? undefined : Number(a.limit);
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 0))
      throw new CliError(`invalid --limit ${JSON.stringify(a.limit)}: expected a whole number`);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/orders/history', {
        params: {
          path: cityPath(city),
          query: { ...(a.order ? { scoped_name: a.order } : {}), ...(limit !== undefined ? { limit } : {}) },
        },
      }),
    );
    if (a.json) return json(data);
    if (data.entries.length === 0) return line('No firings.');
    table<OrderHistoryEntry>(
      [
        { header: 'BEAD', value: (e) => e.bead_id, kind: 'id' },
        { header: 'ORDER', value: (e) => e.name },
        { header: 'AT', value: (e) => e.created_at },
        { header: 'STATUS', value: (e) => e.status ?? '-', kind: 'status' },
        { header: 'EXIT', value: (e) => e.exit_code ?? e.signal ?? '-' },
        { header: 'MS', value: (e) => e.duration_ms ?? '-' },
        { header: 'NOTE', value: (e) => e.error ?? (e.wisp_root_id ? `run ${e.wisp_root_id}` : ''), kind: 'text' },
      ],
      data.entries,
    );
  },
});

const run = command({
  name: 'run',
  description: 'Fire an order now, whatever its trigger (its open firing holds it back unless it is idempotent)',
  examples: ['ctl order run nightly', 'ctl order run deploy --var env=staging'],
  args: {
    ...nameArg,
    var: {
      type: 'string',
      description: 'A var for its formula or params (repeatable)',
      valueHint: 'NAME=VALUE',
      repeatable: true,
    },
    ...inCityFlags,
  },
  async run({ args: a, all }) {
    const { api, city } = await inCity(a);
    const vars = keyValues(all('var'), 'var');
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/order/{name}/run', {
        params: { header: CSRF, path: { ...cityPath(city), name: a.name } },
        body: vars ? { vars } : {},
      }),
    );
    if (a.json) return json(data);
    line(`Fired ${a.name} (tracking bead ${data.tracking_id})`);
  },
});

function toggle(action: 'enable' | 'disable') {
  return command({
    name: action,
    description:
      action === 'enable'
        ? 'Enable an order (written to city.toml)'
        : 'Disable an order (written to city.toml); it no longer fires by itself',
    examples: [`ctl order ${action} nightly`],
    args: { ...nameArg, ...inCityFlags },
    async run({ args: a }) {
      const { api, city } = await inCity(a);
      const params = { header: CSRF, path: { ...cityPath(city), name: a.name } };
      const { data } = await call(
        api,
        action === 'enable'
          ? api.client.POST('/v0/city/{cityName}/order/{name}/enable', { params })
          : api.client.POST('/v0/city/{cityName}/order/{name}/disable', { params }),
      );
      if (a.json) return json(data);
      line(`${action === 'enable' ? 'Enabled' : 'Disabled'} ${a.name}`);
    },
  });
}

export const orderCommand = group({
  name: 'order',
  description: 'Orders: commands and formulas that fire on a schedule, an event or a condition',
  examples: ['ctl order list', 'ctl order check', 'ctl order run nightly', 'ctl order history --order nightly'],
  commands: { list, check, history, run, enable: toggle('enable'), disable: toggle('disable') },
});
