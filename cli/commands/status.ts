import { apiArg, call, connect } from '../_api.js';
import { CliError, leafCommand } from '../_command.js';
import { listCities, resolveCity } from '../_scope.js';
import { renderTable } from '../_table.js';

export const statusCommand = leafCommand('status', {
  meta: {
    name: 'status',
    description: 'Status of a city (by name, --city, CTL_CITY or the working directory), else of the supervisor',
  },
  args: {
    name: { type: 'positional', description: 'City name or directory', required: false },
    city: { type: 'string', description: 'City name or directory' },
    json: { type: 'boolean', description: 'Print JSON' },
    ...apiArg,
  },
  async run({ args }) {
    if (args.name !== undefined && args.city !== undefined && args.name !== args.city) {
      throw new CliError('pass the city either as an argument or with --city, not both');
    }
    const api = connect(args.api);
    const city = await resolveCity(api, args.name ?? args.city);
    if (!city) {
      const { data: health } = await call(api, api.client.GET('/health'));
      const cities = { items: await listCities(api) };
      if (args.json) {
        process.stdout.write(JSON.stringify({ supervisor: health, cities: cities.items }) + '\n');
        return;
      }
      process.stdout.write(
        `Supervisor ${health.status} (pid ${health.pid}, up ${health.uptime_sec}s) at ${api.base}: ` +
          `${health.cities_running}/${health.cities_total} cities running\n`,
      );
      if (cities.items.length) {
        const rows = cities.items.map((c) => [c.name, c.running ? 'running' : (c.status ?? ''), c.path]);
        process.stdout.write(renderTable(['NAME', 'STATUS', 'PATH'], rows));
      }
      return;
    }
    if (!city.running) {
      if (args.json) {
        process.stdout.write(JSON.stringify(city) + '\n');
        return;
      }
      process.stdout.write(
        `City ${city.name} is not running: ${city.status ?? 'unknown'}${city.error ? ` (${city.error})` : ''}\n  path ${city.path}\n`,
      );
      return;
    }
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/status', { params: { path: { cityName: city.name } } }),
    );
    if (args.json) {
      process.stdout.write(JSON.stringify(data) + '\n');
      return;
    }
    process.stdout.write(
      `City ${data.name} is running (pid ${city.pid ?? '?'}, up ${data.uptime_sec}s)\n` +
        `  path    ${data.path}\n` +
        `  agents  ${data.agents.total} (${data.agents.running} running)\n` +
        `  rigs    ${data.rigs.total}\n` +
        `  events  ${data.event_head ?? 0}\n`,
    );
  },
});
