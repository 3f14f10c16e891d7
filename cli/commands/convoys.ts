import { defineCommand } from 'citty';
import type { ConvoyCreateInputBody } from '../../shared/dto/convoys.js';
import { call, CSRF, type Api } from '../_api.js';
import { CliError, leafCommand } from '../_command.js';
import { collectPages, noteMore } from '../_pages.js';
import { renderTable } from '../_table.js';
import {
  cityArgs,
  cityPath,
  inCity,
  listLimit,
  optString,
  positionals,
  repeated,
  variadicCommand,
  write,
  writeJson,
} from '../_work.js';
import { beadTable } from './beads.js';

const idArg = { id: { type: 'positional', description: 'Convoy id', required: true } } as const;

const create = leafCommand('convoy create', {
  meta: { name: 'create', description: 'Create a convoy tracking beads' },
  args: {
    title: { type: 'positional', description: 'Title', required: true },
    item: { type: 'string', description: 'A bead to track (repeatable)', valueHint: 'ID' },
    rig: { type: 'string', description: 'Rig the convoy belongs to' },
    'idempotency-key': { type: 'string', description: 'Makes a retried create safe', valueHint: 'KEY' },
    ...cityArgs,
  },
  async run({ args: a, rawArgs }) {
    const body: ConvoyCreateInputBody = { title: a.title };
    const items = repeated(rawArgs, '--item');
    const rig = optString(a.rig, 'rig');
    const key = optString(a['idempotency-key'], 'idempotency-key');
    if (items.length) body.items = items;
    if (rig !== undefined) body.rig = rig;
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/convoys', {
        params: { header: { ...CSRF, ...(key !== undefined ? { 'idempotency-key': key } : {}) }, path: cityPath(city) },
        body,
      }),
    );
    if (a.json) return writeJson(data);
    write(`Created convoy ${data.id}: ${data.title} (${items.length} ${items.length === 1 ? 'item' : 'items'})`);
  },
});

const itemsArgs = {
  ...idArg,
  items: { type: 'positional', description: 'Bead ids (one or more)', required: true, valueHint: 'ITEM…' },
  ...cityArgs,
} as const;

/** `convoy add` and `convoy remove`: POST `{items}` to `/convoy/{id}/<action>`. */
function itemsCommand(action: 'add' | 'remove', description: string) {
  return variadicCommand(`convoy ${action}`, {
    meta: { name: action, description },
    args: itemsArgs,
    async run({ args: a, rawArgs }) {
      const items = positionals(rawArgs, itemsArgs).slice(1);
      if (items.length === 0) throw new CliError('pass at least one ITEM');
      const { api, city } = await inCity(a);
      const params = { header: CSRF, path: { ...cityPath(city), id: a.id } };
      const { data } = await call(
        api,
        action === 'add'
          ? api.client.POST('/v0/city/{cityName}/convoy/{id}/add', { params, body: { items } })
          : api.client.POST('/v0/city/{cityName}/convoy/{id}/remove', { params, body: { items } }),
      );
      if (a.json) return writeJson(data);
      const n = `${items.length} ${items.length === 1 ? 'item' : 'items'}`;
      write(action === 'add' ? `Added ${n} to ${a.id}` : `Removed ${n} from ${a.id}`);
    },
  });
}

const add = itemsCommand('add', 'Track more beads');
const remove = itemsCommand('remove', 'Stop tracking beads');

const check = leafCommand('convoy check', {
  meta: {
    name: 'check',
    description: 'How many tracked beads are closed; complete once all are, and then the convoy is closed',
  },
  args: { ...idArg, ...cityArgs },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const path = { ...cityPath(city), id: a.id };
    const { data } = await call(api, api.client.GET('/v0/city/{cityName}/convoy/{id}/check', { params: { path } }));
    // A complete convoy is closed, as the reference's `convoy check` does (closing a closed one is a no-op).
    if (data.complete) {
      await call(api, api.client.POST('/v0/city/{cityName}/convoy/{id}/close', { params: { header: CSRF, path } }));
    }
    if (a.json) return writeJson(data);
    write(
      `${data.convoy_id}: ${data.complete ? 'complete, closed' : 'incomplete'} (${data.closed}/${data.total} closed)`,
    );
  },
});

const close = leafCommand('convoy close', {
  meta: { name: 'close', description: 'Close a convoy (closing a closed one changes nothing)' },
  args: { ...idArg, ...cityArgs },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/convoy/{id}/close', {
        params: { header: CSRF, path: { ...cityPath(city), id: a.id } },
      }),
    );
    if (a.json) return writeJson(data);
    write(`Closed convoy ${a.id}`);
  },
});

const show = leafCommand('convoy show', {
  meta: { name: 'show', description: 'A convoy, its progress and the beads it tracks' },
  args: { ...idArg, ...cityArgs },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/convoy/{id}', { params: { path: { ...cityPath(city), id: a.id } } }),
    );
    if (a.json) return writeJson(data);
    const c = data.convoy;
    write(`${c.id} (${c.status}): ${c.title}; ${data.progress.closed}/${data.progress.total} closed`);
    if (data.children.length) process.stdout.write(beadTable(data.children));
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
        if (err instanceof CliError) return '-';
        throw err;
      }
    });
    out.push(...(await Promise.all(batch)));
  }
  return out;
}

const list = leafCommand('convoy list', {
  meta: { name: 'list', description: 'Open convoys, newest first, with their progress' },
  args: {
    limit: { type: 'string', description: 'At most this many (default 100; pages through the API)', valueHint: 'N' },
    ...cityArgs,
  },
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
    if (a.json) return writeJson(body);
    if (body.items.length === 0) return write('No open convoys.');
    const progress = await progressOf(
      api,
      city.name,
      body.items.map((c) => c.id),
    );
    process.stdout.write(
      renderTable(
        ['ID', 'STATUS', 'CLOSED', 'TITLE'],
        body.items.map((c, i) => [c.id, c.status, progress[i], c.title]),
      ),
    );
    noteMore(body.items.length, body.total);
  },
});

export const convoyCommand = defineCommand({
  meta: { name: 'convoy', description: 'Convoys: beads tracked together to completion' },
  subCommands: { create, add, remove, check, close, list, show },
});
