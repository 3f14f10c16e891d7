import type { ServiceStatus } from '../../shared/dto/services.js';
import { call, CSRF } from '../_api.js';
import { command, group } from '../_command.js';
import { inCityFlags } from '../_flags.js';
import { json, line, table } from '../_output.js';
import { cityPath, inCity } from '../_scope.js';

const list = command({
  name: 'list',
  description: 'The city’s workspace services: state, where they listen, restarts, why one is down',
  examples: ['ctl service list', 'ctl service list --json'],
  args: { ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/services', { params: { path: cityPath(city) } }),
    );
    if (a.json) return json(data);
    if (data.items.length === 0) return line('No services ([[service]] in city.toml).');
    table<ServiceStatus>(
      [
        { header: 'NAME', value: (s) => s.service_name, kind: 'id' },
        { header: 'STATE', value: (s) => s.local_state, kind: 'status' },
        { header: 'PID', value: (s) => (s.pid !== undefined ? String(s.pid) : '-') },
        { header: 'RESTARTS', value: (s) => String(s.restarts) },
        { header: 'UPSTREAM', value: (s) => s.url ?? '-' },
        { header: 'MOUNT', value: (s) => s.mount_path },
        { header: 'REASON', value: (s) => s.reason ?? '', kind: 'text' },
      ],
      data.items,
    );
  },
});

const restart = command({
  name: 'restart',
  description: 'Restart a program service now (its process group ended, started again, back-off forgotten)',
  examples: ['ctl service restart web'],
  args: { name: { type: 'positional', description: 'Service name', required: true }, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/service/{name}/restart', {
        params: { header: CSRF, path: { ...cityPath(city), name: a.name } },
      }),
    );
    if (a.json) return json(data);
    line(`Restarting service ${a.name}`);
  },
});

export const serviceCommand = group({
  name: 'service',
  description: 'Workspace services: programs and URLs reached through /v0/city/<city>/svc/<name>/',
  examples: ['ctl service list', 'ctl service restart web'],
  commands: { list, restart },
});
