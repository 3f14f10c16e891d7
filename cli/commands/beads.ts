import { defineCommand } from 'citty';
import type { Bead, BeadCreateInputBody, BeadDepInputBody, BeadUpdateBody } from '../../shared/dto/beads.js';
import { call, CSRF } from '../_api.js';
import { CliError, leafCommand } from '../_command.js';
import { collectPages, noteMore } from '../_pages.js';
import { renderTable } from '../_table.js';
import {
  cell,
  cityArgs,
  cityPath,
  inCity,
  listLimit,
  optInteger,
  optString,
  parseMeta,
  renderFields,
  repeated,
  write,
  writeJson,
} from '../_work.js';

type DepKind = NonNullable<BeadDepInputBody['type']>;
/** Every kind, checked against the API's type (a kind added there fails to compile here until listed). */
const DEP_KINDS_SEEN: Record<DepKind, true> = {
  blocks: true,
  'waits-for': true,
  'conditional-blocks': true,
  tracks: true,
  'parent-child': true,
  'relates-to': true,
};
const DEP_KINDS = Object.keys(DEP_KINDS_SEEN) as DepKind[];

/** `--type`, checked here so a typo gets a short answer rather than the API's schema error. */
function depKind(value: unknown): DepKind | undefined {
  const type = optString(value, 'type');
  if (type !== undefined && !(DEP_KINDS as string[]).includes(type)) {
    throw new CliError(`--type must be one of ${DEP_KINDS.join(', ')}, not ${JSON.stringify(type)}`);
  }
  return type as DepKind | undefined;
}

const idArg = { id: { type: 'positional', description: 'Bead id', required: true } } as const;

/** Beads as a table, one row each. */
export function beadTable(beads: Bead[]): string {
  const rows = beads.map((b) => [
    b.id,
    b.status,
    b.issue_type,
    cell(b.priority),
    cell(b.assignee),
    cell(b.labels?.join(',')),
    b.title,
  ]);
  return renderTable(['ID', 'STATUS', 'TYPE', 'PRI', 'ASSIGNEE', 'LABELS', 'TITLE'], rows);
}

function metaText(metadata: Record<string, string> | undefined): string | undefined {
  const entries = Object.entries(metadata ?? {});
  return entries.length ? entries.map(([k, v]) => `${k}=${v}`).join(', ') : undefined;
}

function showBead(b: Bead): string {
  return renderFields([
    ['ID', b.id],
    ['Title', b.title],
    ['Status', b.status],
    ['Type', b.issue_type],
    ['Priority', b.priority],
    ['Assignee', b.assignee],
    ['Labels', b.labels?.join(', ')],
    ['Parent', b.parent],
    ['Depends on', (b.dependencies ?? []).map((d) => `${d.depends_on_id} (${d.type})`).join(', ')],
    ['Blocked', b.is_blocked ? 'yes' : undefined],
    ['Metadata', metaText(b.metadata)],
    ['Deferred until', b.defer_until],
    ['Created', b.created_at],
    ['Updated', b.updated_at],
    ['Description', b.description],
  ]);
}

const create = leafCommand('bead create', {
  meta: { name: 'create', description: 'Create a bead (open; type task unless --type)' },
  args: {
    title: { type: 'positional', description: 'Title', required: true },
    type: { type: 'string', description: 'Type (task, bug, feature, chore, epic, …; default task)' },
    description: { type: 'string', description: 'Description' },
    priority: { type: 'string', description: 'Priority, 0 (highest) to 4', valueHint: '0-4' },
    assignee: { type: 'string', description: 'Who works on it' },
    label: { type: 'string', description: 'A label (repeatable)', valueHint: 'LABEL' },
    parent: { type: 'string', description: 'Parent bead id', valueHint: 'ID' },
    meta: { type: 'string', description: 'A metadata entry (repeatable)', valueHint: 'KEY=VALUE' },
    rig: { type: 'string', description: 'Rig (recorded as metadata rig)' },
    'defer-until': { type: 'string', description: 'Hide it from ready until this time (RFC 3339)', valueHint: 'TIME' },
    'idempotency-key': { type: 'string', description: 'Makes a retried create safe', valueHint: 'KEY' },
    ...cityArgs,
  },
  async run({ args: a, rawArgs }) {
    const body: BeadCreateInputBody = { title: a.title };
    const type = optString(a.type, 'type');
    const description = optString(a.description, 'description');
    const priority = optInteger(a.priority, 'priority');
    const assignee = optString(a.assignee, 'assignee');
    const parent = optString(a.parent, 'parent');
    const rig = optString(a.rig, 'rig');
    const deferUntil = optString(a['defer-until'], 'defer-until');
    const key = optString(a['idempotency-key'], 'idempotency-key');
    const labels = repeated(rawArgs, '--label');
    const metadata = parseMeta(repeated(rawArgs, '--meta'));
    if (type !== undefined) body.type = type;
    if (description !== undefined) body.description = description;
    if (priority !== undefined) body.priority = priority;
    if (assignee !== undefined) body.assignee = assignee;
    if (labels.length) body.labels = labels;
    if (metadata) body.metadata = metadata;
    if (parent !== undefined) body.parent = parent;
    if (rig !== undefined) body.rig = rig;
    if (deferUntil !== undefined) body.defer_until = deferUntil;
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/beads', {
        params: { header: { ...CSRF, ...(key !== undefined ? { 'idempotency-key': key } : {}) }, path: cityPath(city) },
        body,
      }),
    );
    if (a.json) return writeJson(data);
    write(`Created ${data.id}: ${data.title}`);
  },
});

const show = leafCommand('bead show', {
  meta: { name: 'show', description: 'Show a bead' },
  args: { ...idArg, ...cityArgs },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/bead/{id}', { params: { path: { ...cityPath(city), id: a.id } } }),
    );
    if (a.json) return writeJson(data);
    process.stdout.write(showBead(data));
  },
});

const list = leafCommand('bead list', {
  meta: { name: 'list', description: 'List beads, newest first (open and in progress unless --all or --status)' },
  args: {
    status: { type: 'string', description: 'open, in_progress or closed' },
    type: { type: 'string', description: 'Only beads of this type' },
    label: { type: 'string', description: 'Only beads with this label' },
    assignee: { type: 'string', description: 'Only beads assigned to this agent' },
    rig: { type: 'string', description: 'Only beads of this rig' },
    all: { type: 'boolean', description: 'Include closed beads' },
    limit: { type: 'string', description: 'At most this many (default 100; pages through the API)', valueHint: 'N' },
    ...cityArgs,
  },
  async run({ args: a }) {
    const limit = listLimit(a.limit);
    const filters = {
      status: optString(a.status, 'status'),
      type: optString(a.type, 'type'),
      label: optString(a.label, 'label'),
      assignee: optString(a.assignee, 'assignee'),
      rig: optString(a.rig, 'rig'),
    };
    const query = Object.fromEntries(Object.entries(filters).filter(([, v]) => v !== undefined));
    const { api, city } = await inCity(a);
    const body = await collectPages(limit, async (size, cursor) => {
      const { data } = await call(
        api,
        api.client.GET('/v0/city/{cityName}/beads', {
          params: {
            path: cityPath(city),
            query: { ...query, ...(a.all ? { all: true } : {}), limit: size, ...(cursor ? { cursor } : {}) },
          },
        }),
      );
      return data;
    });
    if (a.json) return writeJson(body);
    if (body.items.length === 0) return write('No beads.');
    process.stdout.write(beadTable(body.items));
    noteMore(body.items.length, body.total);
  },
});

const ready = leafCommand('bead ready', {
  meta: {
    name: 'ready',
    description: 'Beads ready to start, oldest first: open, not deferred, every blocking dependency closed',
  },
  args: {
    assignee: { type: 'string', description: 'Only beads assigned to this agent' },
    limit: { type: 'string', description: 'At most this many (default 100; pages through the API)', valueHint: 'N' },
    ...cityArgs,
  },
  async run({ args: a }) {
    const limit = listLimit(a.limit);
    const assignee = optString(a.assignee, 'assignee');
    const { api, city } = await inCity(a);
    const body = await collectPages(limit, async (size, cursor) => {
      const { data } = await call(
        api,
        api.client.GET('/v0/city/{cityName}/beads/ready', {
          params: {
            path: cityPath(city),
            query: { ...(assignee !== undefined ? { assignee } : {}), limit: size, ...(cursor ? { cursor } : {}) },
          },
        }),
      );
      return data;
    });
    if (a.json) return writeJson(body);
    if (body.items.length === 0) return write('No ready beads.');
    process.stdout.write(beadTable(body.items));
    noteMore(body.items.length, body.total);
  },
});

const update = leafCommand('bead update', {
  meta: {
    name: 'update',
    description: 'Change a bead: labels are added and removed, metadata merged (KEY= removes a key)',
  },
  args: {
    ...idArg,
    title: { type: 'string', description: 'New title' },
    status: { type: 'string', description: 'open, in_progress or closed' },
    type: { type: 'string', description: 'New type' },
    priority: { type: 'string', description: 'Priority, 0 (highest) to 4', valueHint: '0-4' },
    assignee: { type: 'string', description: 'New assignee' },
    description: { type: 'string', description: 'New description' },
    'add-label': { type: 'string', description: 'Add a label (repeatable)', valueHint: 'LABEL' },
    'remove-label': { type: 'string', description: 'Remove a label (repeatable)', valueHint: 'LABEL' },
    meta: { type: 'string', description: 'Set a metadata entry; KEY= removes it (repeatable)', valueHint: 'KEY=VALUE' },
    parent: { type: 'string', description: 'New parent bead id (--no-parent clears it)', valueHint: 'ID' },
    ...cityArgs,
  },
  async run({ args: a, rawArgs }) {
    const body: BeadUpdateBody = {};
    const title = optString(a.title, 'title');
    const status = optString(a.status, 'status');
    const type = optString(a.type, 'type');
    const priority = optInteger(a.priority, 'priority');
    const assignee = optString(a.assignee, 'assignee');
    const description = optString(a.description, 'description');
    const addLabels = repeated(rawArgs, '--add-label');
    const removeLabels = repeated(rawArgs, '--remove-label');
    const metadata = parseMeta(repeated(rawArgs, '--meta'));
    // citty reads `--no-parent` as parent=false.
    const parentValue = a.parent as unknown;
    if (parentValue === false) body.parent = null;
    else {
      const parent = optString(parentValue, 'parent');
      if (parent !== undefined) body.parent = parent;
    }
    if (title !== undefined) body.title = title;
    if (status !== undefined) body.status = status;
    if (type !== undefined) body.type = type;
    if (priority !== undefined) body.priority = priority;
    if (assignee !== undefined) body.assignee = assignee;
    if (description !== undefined) body.description = description;
    if (addLabels.length) body.labels = addLabels;
    if (removeLabels.length) body.remove_labels = removeLabels;
    if (metadata) body.metadata = metadata;
    if (Object.keys(body).length === 0) {
      throw new CliError('nothing to change; pass --title, --status, --add-label, --meta, … (see --help)');
    }
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.PATCH('/v0/city/{cityName}/bead/{id}', {
        params: { header: CSRF, path: { ...cityPath(city), id: a.id } },
        body,
      }),
    );
    if (a.json) return writeJson(data);
    write(`Updated ${a.id}`);
  },
});

/** `bead close` and `bead reopen`: a POST to `/bead/{id}/<action>`, reported in one line. */
function beadAction(action: 'close' | 'reopen', description: string, done: string) {
  return leafCommand(`bead ${action}`, {
    meta: { name: action, description },
    args: { ...idArg, ...cityArgs },
    async run({ args: a }) {
      const { api, city } = await inCity(a);
      const params = { header: CSRF, path: { ...cityPath(city), id: a.id } };
      const { data } = await call(
        api,
        action === 'close'
          ? api.client.POST('/v0/city/{cityName}/bead/{id}/close', { params })
          : api.client.POST('/v0/city/{cityName}/bead/{id}/reopen', { params }),
      );
      if (a.json) return writeJson(data);
      write(`${done} ${a.id}`);
    },
  });
}

const close = beadAction('close', 'Close a bead (closing a closed bead changes nothing)', 'Closed');
const reopen = beadAction('reopen', 'Return a closed bead to open', 'Reopened');

const remove = leafCommand('bead delete', {
  meta: { name: 'delete', description: 'Delete a bead, and the dependencies and parent links pointing at it' },
  args: { ...idArg, ...cityArgs },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.DELETE('/v0/city/{cityName}/bead/{id}', {
        params: { header: CSRF, path: { ...cityPath(city), id: a.id } },
      }),
    );
    if (a.json) return writeJson(data);
    write(`Deleted ${a.id}`);
  },
});

const assign = leafCommand('bead assign', {
  meta: { name: 'assign', description: 'Set who works on a bead (or --clear it)' },
  args: {
    ...idArg,
    assignee: { type: 'positional', description: 'Agent', required: false },
    clear: { type: 'boolean', description: 'Remove the assignee' },
    ...cityArgs,
  },
  async run({ args: a }) {
    const assignee: string | undefined = a.assignee;
    if ((assignee === undefined) === !a.clear) throw new CliError('pass exactly one of ASSIGNEE and --clear');
    if (assignee === '') throw new CliError('empty assignee; use --clear to remove it');
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/bead/{id}/assign', {
        params: { header: CSRF, path: { ...cityPath(city), id: a.id } },
        body: { assignee: assignee ?? '' },
      }),
    );
    if (a.json) return writeJson(data);
    write(data.assignee ? `Assigned ${data.id} to ${data.assignee}` : `Unassigned ${data.id}`);
  },
});

const depArgs = {
  ...idArg,
  dependsOn: { type: 'positional', description: 'The bead it depends on', required: true, valueHint: 'DEPENDS_ON' },
  type: {
    type: 'string',
    description: 'blocks (default), waits-for, conditional-blocks, tracks, parent-child or relates-to',
    valueHint: 'KIND',
  },
  ...cityArgs,
} as const;

const depAdd = leafCommand('bead dep add', {
  meta: { name: 'add', description: 'Make a bead depend on another (blocks unless --type)' },
  args: depArgs,
  async run({ args: a }) {
    const type = depKind(a.type);
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/bead/{id}/deps', {
        params: { header: CSRF, path: { ...cityPath(city), id: a.id } },
        body: { depends_on: a.dependsOn, ...(type !== undefined ? { type } : {}) },
      }),
    );
    if (a.json) return writeJson(data);
    write(`${a.id} depends on ${a.dependsOn} (${type ?? 'blocks'})`);
  },
});

const depRemove = leafCommand('bead dep remove', {
  meta: { name: 'remove', description: 'Remove a dependency (of --type, or of every kind)' },
  args: depArgs,
  async run({ args: a }) {
    const type = depKind(a.type);
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.DELETE('/v0/city/{cityName}/bead/{id}/deps/{dependsOn}', {
        params: {
          header: CSRF,
          path: { ...cityPath(city), id: a.id, dependsOn: a.dependsOn },
          query: type !== undefined ? { type } : {},
        },
      }),
    );
    if (a.json) return writeJson(data);
    write(`${a.id} no longer depends on ${a.dependsOn}${type !== undefined ? ` (${type})` : ''}`);
  },
});

const depList = leafCommand('bead dep list', {
  meta: { name: 'list', description: "A bead's dependencies, and the beads depending on it" },
  args: { ...idArg, ...cityArgs },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/bead/{id}/deps', { params: { path: { ...cityPath(city), id: a.id } } }),
    );
    if (a.json) return writeJson(data);
    const byId = new Map([...data.depends_on, ...data.dependents].map((b) => [b.id, b]));
    const rows = [
      ...data.dependencies.map((d) => ['depends on', d.type, d.depends_on_id, byId.get(d.depends_on_id)]),
      ...data.dependents.map((b) => [
        'needed by',
        (b.dependencies ?? []).find((d) => d.depends_on_id === a.id)?.type,
        b.id,
        b,
      ]),
    ] as [string, string | undefined, string, Bead | undefined][];
    if (rows.length === 0) return write(`${a.id} has no dependencies and no dependents.`);
    process.stdout.write(
      renderTable(
        ['RELATION', 'KIND', 'ID', 'STATUS', 'TITLE'],
        rows.map(([rel, kind, id, b]) => [rel, cell(kind), id, cell(b?.status), b?.title ?? '']),
      ),
    );
  },
});

const dep = defineCommand({
  meta: { name: 'dep', description: 'Dependencies between beads' },
  subCommands: { add: depAdd, remove: depRemove, list: depList },
});

export const beadCommand = defineCommand({
  meta: { name: 'bead', description: "Create, list and change the city's beads (work units)" },
  subCommands: { create, show, list, ready, update, close, reopen, assign, dep, delete: remove },
});
