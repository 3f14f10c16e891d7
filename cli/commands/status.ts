import { call, connect } from '../_api.js';
import { command } from '../_command.js';
import { CliError } from '../_errors.js';
import { apiFlag, cityFlag, jsonFlag } from '../_flags.js';
import { json, line, paint, statusColour, table } from '../_output.js';
import { listCities, resolveCity, withSuspension } from '../_scope.js';
import { CITY_COLUMNS } from '../_views.js';

export const statusCommand = command({
  name: 'status',
  description: 'Status of a city (by name, --city, CTL_CITY or the working directory), else of the supervisor',
  examples: ['ctl status            # the city you are in, or the supervisor', 'ctl status alpha', 'ctl status --json'],
  args: {
    name: { type: 'positional', description: 'City name or directory', required: false, complete: 'cities' },
    ...cityFlag,
    ...jsonFlag,
    ...apiFlag,
  },
  async run({ args: a }) {
    if (a.name !== undefined && a.city !== undefined && a.name !== a.city) {
      throw new CliError('pass the city either as an argument or with --city, not both');
    }
    const api = connect(a.api);
    const city = await resolveCity(api, a.name ?? a.city);
    if (!city) {
      const { data: health } = await call(api, api.client.GET('/health'));
      const cities = await listCities(api);
      if (a.json) return json({ supervisor: health, cities });
      line(
        `Supervisor ${paint(health.status, statusColour(health.status))} (pid ${health.pid}, up ${health.uptime_sec}s) ` +
          `at ${api.base}: ${health.cities_running}/${health.cities_total} cities running`,
      );
      if (cities.length) table(CITY_COLUMNS, await withSuspension(api, cities));
      return;
    }
    if (!city.running) {
      if (a.json) return json(city);
      const status = city.status ?? 'unknown';
      line(
        `City ${city.name} is not running: ${paint(status, statusColour(status))}${city.error ? ` (${city.error})` : ''}`,
      );
      line(`  path ${city.path}`);
      return;
    }
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/status', { params: { path: { cityName: city.name } } }),
    );
    if (a.json) return json(data);
    const state = data.suspended ? paint('suspended', 'yellow') : paint('running', 'green');
    line(`City ${data.name} is ${state} (pid ${city.pid ?? '?'}, up ${data.uptime_sec}s)`);
    line(`  path    ${data.path}`);
    line(`  agents  ${data.agents.total} (${data.agents.running} running)`);
    line(`  rigs    ${data.rigs.total}`);
    line(`  events  ${data.event_head ?? 0}`);
    // The files on disk are not what runs: say so where a person looks first.
    if (data.config_reload_error) {
      line(`  config  ${paint('last good config', 'yellow')} (reload failed: ${data.config_reload_error})`);
    }
  },
});
