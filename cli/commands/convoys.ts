import type { Bead } from '../../shared/dto/beads.js';
import type { ConvoyCreateInputBody } from '../../shared/dto/convoys.js';
import { idAction } from '../_action.js';
import { call, CSRF } from '../_api.js';
import { command, group } from '../_command.js';
import { ApiProblem } from '../_errors.js';
import { idempotencyFlag, inCityFlags, limitFlag, listLimit } from '../_flags.js';
import { json, line, noteMore, table } from '../_output.js';
import { collectPages } from '../_pages.js';
import { cityPath, inCity } from '../_scope.js';
import type { Api } from '../_types.js';
import { beadTable } from '../_views.js';

const idArg = { id: { type: 'positional', description: 'Convoy id', required: true } } as const;

function itemCount(n: number): string {
  return `${n} ${n === 1 ? 'item' : 'items'}`;
}

const create = command({
  name: 'create',
  description: 'Create a convoy tracking beads',
  examples: ['ctl convoy create "Release 1.2" --item alp-1 --item alp-2'],
  args: {
    title: { type: 'positional', description: 'Title', required: true },
    item: {
      type: 'string',
      description: 'A bead to track (repeatable)',
      valueHint: 'ID',
      repeatable: true,
      field: 'items',
    },
    rig: { type: 'string', description: 'Rig the convoy belongs to' },
    ...idempotencyFlag,
    ...inCityFlags,
  },
  async run({ args: a, all }) {
    const body: ConvoyCreateInputBody = { title: a.title };
    const items = all('item');
    if (items.length) body.items = items;
    if (a.rig !== undefined) body.rig = a.rig;
    const key = a['idempotency-key'];
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/convoys', {
        params: { header: { ...CSRF, ...(key !== undefined ? { 'idempotency-key': key } : {}) }, path: cityPath(city) },
        body,
      }),
    );
    if (a.json) return json(data);
    line(`Created convoy ${data.id}: ${data.title} (${itemCount(items.length)})`);
  },
});

const itemsArgs = {
  ...idArg,
  items: { type: 'positional', description: 'Bead ids (one or more)', required: true, valueHint: 'ITEM…' },
  ...inCityFlags,
} as const;

/** `convoy add` and `convoy remove`: POST `{items}` to `/convoy/{id}/<action>`. */
function itemsCommand(action: 'add' | 'remove', description: string, example: string) {
  return command({
    name: action,
    description,
    examples: [example],
    args: itemsArgs,
    variadic: true,
    async run({ args: a, rest }) {
      const items = [a.items, ...rest];
      const { api, city } = await inCity(a);
      const params = { header: CSRF, path: { ...cityPath(city), id: a.id } };
      const { data } = await call(
        api,
        action === 'add'
          ? api.client.POST('/v0/city/{cityName}/convoy/{id}/add', { params, body: { items } })
          : api.client.POST('/v0/city/{cityName}/convoy/{id}/remove', { params, body: { items } }),
      );
      if (a.json) return json(data);
      const n = itemCount(items.length);
      line(action === 'add' ? `Added ${n} to ${a.id}` : `Removed ${n} from ${a.id}`);
    },
  });
}

const add = itemsCommand('add', 'Track more beads', 'ctl convoy add alp-4 alp-3 alp-5');
const remove = itemsCommand('remove', 'Stop tracking beads', 'ctl convoy remove alp-4 alp-5');

const check = command({
  name: 'check',
  description: 'How many tracked beads are closed; complete once all are, and then the convoy is closed',
  examples: ['ctl convoy check alp-4'],
  args: { ...idArg, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const path = { ...cityPath(city), id: a.id };
    const { data } = await call(api, api.client.GET('/v0/city/{cityName}/convoy/{id}/check', { params: { path } }));
    // A complete convoy is closed, as the reference's `convoy check` does (closing a closed one is a no-op).
    if (data.complete) {
      await call(api, api.client.POST('/v0/city/{cityName}/convoy/{id}/close', { params: { header: CSRF, path } }));
    }
    if (a.json) return json(data);
    line(
      `${data.convoy_id}: ${data.complete ? 'complete, closed' : 'incomplete'} (${data.closed}/${data.total} closed)`,
    );
  },
});

const close = idAction({
  name: 'close',
  description: 'Close a convoy (closing a closed one changes nothing)',
  examples: ['ctl convoy close alp-4'],
  id: 'Convoy id',
  request: (api, path) => api.client.POST('/v0/city/{cityName}/convoy/{id}/close', { params: { header: CSRF, path } }),
  done: (_, id) => `Closed convoy ${id}`,
});

const show = command({
  name: 'show',
  description: 'A convoy, its progress and the beads it tracks',
  examples: ['ctl convoy show alp-4'],
  args: { ...idArg, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/convoy/{id}', { params: { path: { ...cityPath(city), id: a.id } } }),
    );
    if (a.json) return json(data);
    const c = data.convoy;
    line(`${c.id} (${c.status}): ${c.title}; ${data.progress.closed}/${data.progress.total} closed`);
    if (data.children.length) beadTable(data.children);
  },
});

/** `closed/total` of each convoy, asked a few at a time; `-` for one gone meanwhile. */
async function progressOf(api: Api, cityName: string, ids: string[]): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < ids.length; i += 16) {
    const batch = ids.slice(i, i + 16).map(async (id) => {
      try {
        const { data } = await call(
          api,
          api.client.GET('/v0/city/{cityName}/convoy/{id}/check', { params: { path: { cityName, id } } }),
        );
        return `${data.closed}/${data.total}`;
      } catch (err) {
        if (err instanceof ApiProblem) return '-';
        throw err;
      }
    });
    out.push(...(await Promise.all(batch)));
  }
  return out;
}

const list = command({
  name: 'list',
  description: 'Open convoys, newest first, with their progress',
  examples: ['ctl convoy list', 'ctl convoy list --json'],
  args: { ...limitFlag, ...inCityFlags },
  async run({ args: a }) {
    const limit = listLimit(a.limit);
    const { api, city } = await inCity(a);
    const body = await collectPages(limit, async (size, cursor) => {
      const { data } = await call(
        api,
        api.client.GET('/v0/city/{cityName}/convoys', {
          params: { path: cityPath(city), query: { limit: size, ...(cursor ? { cursor } : {}) } },
        }),
      );
      return data;
    });
    if (a.json) return json(body);
    if (body.items.length === 0) return line('No open convoys.');
    const progress = await progressOf(
      api,
      city.name,
      body.items.map((c) => c.id),
    );
    const rows = body.items.map((convoy, i) => ({ convoy, progress: progress[i]! }));
    table<{ convoy: Bead; progress: string }>(
      [
        { header: 'ID', value: (r) => r.convoy.id, kind: 'id' },
        { header: 'STATUS', value: (r) => r.convoy.status, kind: 'status' },
        { header: 'CLOSED', value: (r) => r.progress },
        { header: 'TITLE', value: (r) => r.convoy.title, kind: 'text' },
      ],
      rows,
    );
    noteMore(body.items.length, body.total);
  },
});

export const convoyCommand = group({
  name: 'convoy',
  description: 'Convoys: beads tracked together to completion',
  examples: ['ctl convoy create "Release 1.2" --item alp-1 --item alp-2', 'ctl convoy check alp-4'],
  commands: { create, add, remove, check, close, list, show },
});
