import type { Bead, BeadCreateInputBody, BeadDepInputBody, BeadUpdateBody } from '../../shared/dto/beads.js';
import { idAction } from '../_action.js';
import { call, CSRF } from '../_api.js';
import { command, group } from '../_command.js';
import { CliError } from '../_errors.js';
import { idempotencyFlag, inCityFlags, integer, keyValues, limitFlag, listLimit, pointInTime } from '../_flags.js';
import { json, line, noteMore, table } from '../_output.js';
import { collectPages } from '../_pages.js';
import { cityPath, inCity } from '../_scope.js';
import { beadFields, beadTable } from '../_views.js';
import { comment, commentLines, comments, latestComments } from './bead-comments.js';

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

/** How many of its latest comments `bead show` prints. */
const SHOWN_COMMENTS = 3;

const idArg = { id: { type: 'positional', description: 'Bead id', required: true, complete: 'beads' } } as const;

/** `--defer-until`: an RFC 3339 time, or a duration from now. */
function deferUntil(value: string | undefined): string | undefined {
  const ms = pointInTime(value, 'defer-until', 'ahead');
  return ms === undefined ? undefined : new Date(ms).toISOString();
}

const create = command({
  name: 'create',
  description: 'Create a bead (open; type task unless --type)',
  examples: [
    'ctl bead create "Fix the flaky test" --type bug --priority 1 --label ci',
    'ctl bead create "Write the notes" --parent alp-1 --defer-until 2h   # not ready for two hours',
  ],
  args: {
    title: { type: 'positional', description: 'Title', required: true },
    type: { type: 'string', description: 'Type (task, bug, feature, chore, epic, …; default task)' },
    description: { type: 'string', description: 'Description' },
    priority: { type: 'string', description: 'Priority, 0 (highest) to 4', valueHint: '0-4' },
    assignee: { type: 'string', description: 'Who works on it' },
    label: {
      type: 'string',
      description: 'A label (repeatable)',
      valueHint: 'LABEL',
      repeatable: true,
      field: 'labels',
    },
    parent: { type: 'string', description: 'Parent bead id', valueHint: 'ID' },
    meta: {
      type: 'string',
      description: 'A metadata entry (repeatable)',
      valueHint: 'KEY=VALUE',
      repeatable: true,
      field: 'metadata',
    },
    rig: { type: 'string', description: 'Rig (recorded as metadata rig)' },
    'defer-until': {
      type: 'string',
      description: 'Hide it from ready until then (an RFC 3339 time, or a duration from now: 2h, 1d)',
      valueHint: 'TIME',
    },
    ...idempotencyFlag,
    ...inCityFlags,
  },
  async run({ args: a, all }) {
    const body: BeadCreateInputBody = { title: a.title };
    const priority = integer(a.priority, 'priority');
    const labels = all('label');
    const metadata = keyValues(all('meta'), 'meta');
    const defer = deferUntil(a['defer-until']);
    if (a.type !== undefined) body.type = a.type;
    if (a.description !== undefined) body.description = a.description;
    if (priority !== undefined) body.priority = priority;
    if (a.assignee !== undefined) body.assignee = a.assignee;
    if (labels.length) body.labels = labels;
    if (metadata) body.metadata = metadata;
    if (a.parent !== undefined) body.parent = a.parent;
    if (a.rig !== undefined) body.rig = a.rig;
    if (defer !== undefined) body.defer_until = defer;
    const key = a['idempotency-key'];
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/beads', {
        params: { header: { ...CSRF, ...(key !== undefined ? { 'idempotency-key': key } : {}) }, path: cityPath(city) },
        body,
      }),
    );
    if (a.json) return json(data);
    line(`Created ${data.id}: ${data.title}`);
  },
});

const show = command({
  name: 'show',
  description: 'Show a bead, with its latest comments',
  examples: ['ctl bead show alp-1', 'ctl bead show alp-1 --json | jq .labels'],
  args: { ...idArg, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/bead/{id}', { params: { path: { ...cityPath(city), id: a.id } } }),
    );
    if (a.json) return json(data);
    beadFields(data);
    const latest = await latestComments(api, city, a.id, SHOWN_COMMENTS);
    if (latest.total === 0) return;
    const earlier = latest.total - latest.items.length;
    line(`\nComments (${latest.total}${earlier ? `; ${earlier} earlier: ctl bead comments ${a.id}` : ''}):`);
    commentLines(latest.items);
  },
});

const list = command({
  name: 'list',
  description:
    'List beads, newest first (open and in progress unless --all or --status; the beads that record sessions only with --sessions or --type session)',
  examples: [
    'ctl bead list',
    'ctl bead list --status closed --label ci --limit 20',
    'ctl bead list --all --json',
    'ctl bead list --sessions   # with the beads that record sessions (ctl session list shows those)',
  ],
  args: {
    status: { type: 'string', description: 'open, in_progress or closed' },
    type: { type: 'string', description: 'Only beads of this type' },
    label: { type: 'string', description: 'Only beads with this label' },
    assignee: { type: 'string', description: 'Only beads assigned to this agent' },
    rig: { type: 'string', description: 'Only beads of this rig' },
    all: { type: 'boolean', description: 'Include closed beads' },
    sessions: { type: 'boolean', description: 'Include the beads that record sessions (hidden otherwise)' },
    ...limitFlag,
    ...inCityFlags,
  },
  async run({ args: a }) {
    const limit = listLimit(a.limit);
    // Every session is a bead too: they would bury the work a person lists beads to see.
    const hideSessions = a.type === undefined && !a.sessions;
    const filters = {
      status: a.status,
      type: a.type,
      label: a.label,
      assignee: a.assignee,
      rig: a.rig,
      ...(hideSessions ? { exclude_type: 'session' } : {}),
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
    if (a.json) return json(body);
    if (body.items.length === 0) return line('No beads.');
    beadTable(body.items);
    noteMore(body.items.length, body.total);
  },
});

const ready = command({
  name: 'ready',
  description: 'Beads ready to start, oldest first: open, not deferred, every blocking dependency closed',
  examples: ['ctl bead ready', 'ctl bead ready --assignee ann --limit 5'],
  args: {
    assignee: { type: 'string', description: 'Only beads assigned to this agent' },
    ...limitFlag,
    ...inCityFlags,
  },
  async run({ args: a }) {
    const limit = listLimit(a.limit);
    const { api, city } = await inCity(a);
    const body = await collectPages(limit, async (size, cursor) => {
      const { data } = await call(
        api,
        api.client.GET('/v0/city/{cityName}/beads/ready', {
          params: {
            path: cityPath(city),
            query: {
              ...(a.assignee !== undefined ? { assignee: a.assignee } : {}),
              limit: size,
              ...(cursor ? { cursor } : {}),
            },
          },
        }),
      );
      return data;
    });
    if (a.json) return json(body);
    if (body.items.length === 0) return line('No ready beads.');
    beadTable(body.items);
    noteMore(body.items.length, body.total);
  },
});

const update = command({
  name: 'update',
  description: 'Change a bead and show it: labels are added and removed, metadata merged (KEY= removes a key)',
  examples: [
    'ctl bead update alp-1 --status in_progress --assignee ann',
    'ctl bead update alp-1 --add-label urgent --meta area=ci --no-parent',
  ],
  args: {
    ...idArg,
    title: { type: 'string', description: 'New title' },
    status: { type: 'string', description: 'open, in_progress or closed' },
    type: { type: 'string', description: 'New type' },
    priority: { type: 'string', description: 'Priority, 0 (highest) to 4', valueHint: '0-4' },
    assignee: { type: 'string', description: 'New assignee' },
    description: { type: 'string', description: 'New description' },
    'add-label': {
      type: 'string',
      description: 'Add a label (repeatable)',
      valueHint: 'LABEL',
      repeatable: true,
      field: 'labels',
    },
    'remove-label': {
      type: 'string',
      description: 'Remove a label (repeatable)',
      valueHint: 'LABEL',
      repeatable: true,
      field: 'remove_labels',
    },
    meta: {
      type: 'string',
      description: 'Set a metadata entry; KEY= removes it (repeatable)',
      valueHint: 'KEY=VALUE',
      repeatable: true,
      field: 'metadata',
    },
    parent: {
      type: 'string',
      description: 'New parent bead id (--no-parent clears it)',
      valueHint: 'ID',
      negatable: true,
    },
    ...inCityFlags,
  },
  async run({ args: a, all }) {
    const body: BeadUpdateBody = {};
    const priority = integer(a.priority, 'priority');
    const addLabels = all('add-label');
    const removeLabels = all('remove-label');
    const metadata = keyValues(all('meta'), 'meta');
    const parent = a.parent as string | false | undefined; // false: --no-parent
    if (parent !== undefined) body.parent = parent === false ? null : parent;
    if (a.title !== undefined) body.title = a.title;
    if (a.status !== undefined) body.status = a.status;
    if (a.type !== undefined) body.type = a.type;
    if (priority !== undefined) body.priority = priority;
    if (a.assignee !== undefined) body.assignee = a.assignee;
    if (a.description !== undefined) body.description = a.description;
    if (addLabels.length) body.labels = addLabels;
    if (removeLabels.length) body.remove_labels = removeLabels;
    if (metadata) body.metadata = metadata;
    if (Object.keys(body).length === 0) {
      throw new CliError('nothing to change; pass --title, --status, --add-label, --meta, … (see --help)');
    }
    const { api, city } = await inCity(a);
    const path = { ...cityPath(city), id: a.id };
    await call(api, api.client.PATCH('/v0/city/{cityName}/bead/{id}', { params: { header: CSRF, path }, body }));
    // The API answers only that it is done; the bead as it now is, is what a person (or a script) wants.
    const { data } = await call(api, api.client.GET('/v0/city/{cityName}/bead/{id}', { params: { path } }));
    if (a.json) return json(data);
    beadTable([data]);
  },
});

const close = command({
  name: 'close',
  description: 'Close a bead (closing a closed bead changes nothing); inside a session, as its agent (CTL_SESSION_ID)',
  examples: ['ctl bead close alp-1', 'ctl bead close alp-1 --reason "fixed in 3f2c1a"'],
  args: {
    id: { type: 'positional', description: 'Bead id', required: true },
    reason: { type: 'string', description: 'Why it is closed (kept as its close_reason)' },
    session: {
      type: 'string',
      description: 'The session closing it, recorded as closed_by (default: CTL_SESSION_ID)',
      valueHint: 'ID',
    },
    ...inCityFlags,
  },
  async run({ args: a }) {
    const session = a.session?.trim() || process.env.CTL_SESSION_ID?.trim();
    const body = { ...(a.reason !== undefined ? { reason: a.reason } : {}), ...(session ? { session } : {}) };
    const { api, city } = await inCity(a);
    const path = { ...cityPath(city), id: a.id };
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/bead/{id}/close', { params: { header: CSRF, path }, body }),
    );
    if (a.json) return json(data);
    line(`Closed ${a.id}`);
  },
});

const reopen = idAction({
  name: 'reopen',
  description: 'Return a closed bead to open',
  examples: ['ctl bead reopen alp-1'],
  id: 'Bead id',
  request: (api, path) => api.client.POST('/v0/city/{cityName}/bead/{id}/reopen', { params: { header: CSRF, path } }),
  done: (_, id) => `Reopened ${id}`,
});

const remove = idAction({
  name: 'delete',
  description: 'Delete a bead, and the dependencies and parent links pointing at it',
  examples: ['ctl bead delete alp-1'],
  id: 'Bead id',
  request: (api, path) => api.client.DELETE('/v0/city/{cityName}/bead/{id}', { params: { header: CSRF, path } }),
  done: (_, id) => `Deleted ${id}`,
});

const assign = command({
  name: 'assign',
  description: 'Set who works on a bead (or --clear it)',
  examples: ['ctl bead assign alp-1 ann', 'ctl bead assign alp-1 --clear'],
  args: {
    ...idArg,
    assignee: { type: 'positional', description: 'Agent', required: false, complete: 'agents' },
    clear: { type: 'boolean', description: 'Remove the assignee' },
    ...inCityFlags,
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
    if (a.json) return json(data);
    line(data.assignee ? `Assigned ${data.id} to ${data.assignee}` : `Unassigned ${data.id}`);
  },
});

const depArgs = {
  ...idArg,
  dependsOn: {
    type: 'positional',
    description: 'The bead it depends on',
    required: true,
    valueHint: 'DEPENDS_ON',
    complete: 'beads',
  },
  type: { type: 'enum', description: 'Kind of dependency', options: DEP_KINDS, valueHint: 'KIND' },
  ...inCityFlags,
} as const;

const depAdd = command({
  name: 'add',
  description: 'Make a bead depend on another (blocks unless --type)',
  examples: [
    'ctl bead dep add alp-2 alp-1                 # alp-2 waits until alp-1 is closed',
    'ctl bead dep add alp-3 alp-1 --type relates-to',
  ],
  args: depArgs,
  async run({ args: a }) {
    const type = a.type;
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/bead/{id}/deps', {
        params: { header: CSRF, path: { ...cityPath(city), id: a.id } },
        body: { depends_on: a.dependsOn, ...(type !== undefined ? { type } : {}) },
      }),
    );
    if (a.json) return json(data);
    line(`${a.id} depends on ${a.dependsOn} (${type ?? 'blocks'})`);
  },
});

const depRemove = command({
  name: 'remove',
  description: 'Remove a dependency (of --type, or of every kind)',
  examples: ['ctl bead dep remove alp-2 alp-1'],
  args: depArgs,
  async run({ args: a }) {
    const type = a.type;
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
    if (a.json) return json(data);
    line(`${a.id} no longer depends on ${a.dependsOn}${type !== undefined ? ` (${type})` : ''}`);
  },
});

const depList = command({
  name: 'list',
  description: "A bead's dependencies, and the beads depending on it",
  examples: ['ctl bead dep list alp-2'],
  args: { ...idArg, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/bead/{id}/deps', { params: { path: { ...cityPath(city), id: a.id } } }),
    );
    if (a.json) return json(data);
    const byId = new Map([...data.depends_on, ...data.dependents].map((b) => [b.id, b]));
    type Row = { relation: string; kind?: string; id: string; bead?: Bead };
    const rows: Row[] = [
      ...data.dependencies.map((d) => ({
        relation: 'depends on',
        kind: d.type,
        id: d.depends_on_id,
        bead: byId.get(d.depends_on_id),
      })),
      ...data.dependents.map((b) => ({
        relation: 'needed by',
        kind: (b.dependencies ?? []).find((d) => d.depends_on_id === a.id)?.type,
        id: b.id,
        bead: b,
      })),
    ];
    if (rows.length === 0) return line(`${a.id} has no dependencies and no dependents.`);
    table<Row>(
      [
        { header: 'RELATION', value: (r) => r.relation },
        { header: 'KIND', value: (r) => r.kind },
        { header: 'ID', value: (r) => r.id, kind: 'id' },
        { header: 'STATUS', value: (r) => r.bead?.status, kind: 'status' },
        { header: 'TITLE', value: (r) => r.bead?.title, kind: 'text' },
      ],
      rows,
    );
  },
});

const dep = group({
  name: 'dep',
  description: 'Dependencies between beads',
  examples: ['ctl bead dep add alp-2 alp-1', 'ctl bead dep list alp-2'],
  commands: { add: depAdd, remove: depRemove, list: depList },
});

export const beadCommand = group({
  name: 'bead',
  description: "Create, list and change the city's beads (work units)",
  examples: [
    'ctl bead create "Fix the flaky test" --type bug',
    'ctl bead list --city alpha',
    'ctl bead update alp-1 --status in_progress',
  ],
  commands: { create, show, list, ready, update, close, reopen, assign, comment, comments, dep, delete: remove },
});
