import type { HostResponse } from '../../shared/dto/hosts.js';
import { call, CSRF, patient } from '../_api.js';
import { command, group } from '../_command.js';
import { inCityFlags, limitFlag, listLimit } from '../_flags.js';
import { fields, json, noteMore, table } from '../_output.js';
import { collectPages } from '../_pages.js';
import { cityPath, inCity } from '../_scope.js';

/** How long the controller lets one check of a host run (its registry's HOST_CHECK_TIMEOUT_MS). */
const CHECK_WAIT_MS = 30_000;

const nameArg = {
  name: {
    type: 'positional' as const,
    description: 'Host name (local, or a [[host]] name)',
    required: true as const,
    complete: 'hosts' as const,
  },
};

/** `2 of 4`, or `3 (no limit)` for this machine. */
function slotsOf(h: HostResponse): string {
  return h.slots === null ? `${h.used} (no limit)` : `${h.used} of ${h.slots}`;
}

const list = command({
  name: 'list',
  description: 'The machines sessions run on: local and each [[host]], its state, slots used, round trip, last error',
  examples: ['ctl host list', 'ctl host list --json'],
  args: { ...limitFlag, ...inCityFlags },
  async run({ args: a }) {
    const limit = listLimit(a.limit);
    const { api, city } = await inCity(a);
    const body = await collectPages(limit, async (size, cursor) => {
      const { data } = await call(
        api,
        api.client.GET('/v0/city/{cityName}/hosts', {
          params: { path: cityPath(city), query: { limit: size, ...(cursor ? { cursor } : {}) } },
        }),
      );
      return data;
    });
    if (a.json) return json(body);
    table<HostResponse>(
      [
        { header: 'NAME', value: (h) => h.name, kind: 'id' },
        { header: 'STATE', value: (h) => h.state, kind: 'status' },
        { header: 'USED', value: (h) => slotsOf(h) },
        { header: 'LABELS', value: (h) => h.labels.join(',') },
        { header: 'RTT', value: (h) => (h.rtt_ms !== undefined ? `${h.rtt_ms} ms` : '') },
        { header: 'ADDRESS', value: (h) => h.address },
        { header: 'LAST ERROR', value: (h) => h.last_error ?? '', kind: 'text' },
      ],
      body.items,
    );
    noteMore(body.items.length, body.total);
  },
});

function hostFields(h: HostResponse): void {
  fields([
    ['Name', h.name],
    ['Address', h.address],
    ['State', h.state],
    ['Slots used', slotsOf(h)],
    ['Labels', h.labels.join(', ')],
    ['Work root', h.work_root],
    ['Declared in', h.source],
    ['Round trip', h.rtt_ms !== undefined ? `${h.rtt_ms} ms` : undefined],
    ['Node', h.node_version],
    ['ctl', h.ctl_version],
    ['git', h.git === undefined ? undefined : h.git ? 'yes' : 'no'],
    ['tmux', h.tmux === undefined ? undefined : h.tmux ? 'yes' : 'no'],
    ['Last error', h.last_error],
    ['Checked', h.checked_at ?? (h.name === 'local' ? undefined : 'not yet')],
  ]);
}

const show = command({
  name: 'show',
  description: 'One host: its state, slots, what its last check found, and why it is down',
  examples: ['ctl host show build1', 'ctl host show build1 --json'],
  args: { ...nameArg, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/hosts/{name}', { params: { path: { ...cityPath(city), name: a.name } } }),
    );
    if (a.json) return json(data);
    hostFields(data);
  },
});

const check = command({
  name: 'check',
  description: 'Check a host now and show what was found (bounded in time: a host that does not answer is down)',
  examples: ['ctl host check build1'],
  args: { ...nameArg, ...inCityFlags },
  async run({ args: a }) {
    const { api: quick, city } = await inCity(a);
    // A first check ships ctl's Node and tools to the host: the answer may take as long as the check may.
    const api = patient(quick, CHECK_WAIT_MS);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/hosts/{name}/check', {
        params: { header: CSRF, path: { ...cityPath(city), name: a.name } },
      }),
    );
    if (a.json) return json(data);
    hostFields(data);
  },
});

export const hostCommand = group({
  name: 'host',
  description: 'Hosts: the machines a city’s sessions run on (this one, and [[host]] tables reached over OpenSSH)',
  examples: ['ctl host list', 'ctl host show build1', 'ctl host check build1'],
  commands: { list, show, check },
});
