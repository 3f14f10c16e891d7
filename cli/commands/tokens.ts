import type { TokenInfo } from '../../shared/dto/tokens.js';
import { call, connect, CSRF } from '../_api.js';
import { command, group } from '../_command.js';
import { apiFlag, jsonFlag } from '../_flags.js';
import { json, line, table } from '../_output.js';
import { allPages } from '../_pages.js';

const nameArg = { name: { type: 'positional', description: 'Token name', required: true } } as const;

const create = command({
  name: 'create',
  description: 'Create an API token and print its secret, this once (send it as Authorization: Bearer …)',
  examples: [
    'ctl token create ci --read-only --expires 30d',
    'CTL_TOKEN=$(ctl token create deploy --json | jq -r .token)',
  ],
  args: {
    ...nameArg,
    'read-only': { type: 'boolean', description: 'Refuse every mutation made with it' },
    expires: {
      type: 'string',
      description: 'Lifetime (30d, 12h, …); default: it does not expire',
      valueHint: 'DURATION',
      field: 'expires_in',
    },
    ...jsonFlag,
    ...apiFlag,
  },
  async run({ args: a }) {
    const api = connect(a.api);
    const { data } = await call(
      api,
      api.client.POST('/v0/tokens', {
        params: { header: CSRF },
        body: {
          name: a.name,
          ...(a['read-only'] ? { read_only: true } : {}),
          ...(a.expires !== undefined ? { expires_in: a.expires } : {}),
        },
      }),
    );
    if (a.json) return json(data);
    line(data.token);
    const kind = data.read_only ? 'read-only token' : 'token';
    const until = data.expires_at ? `, valid until ${data.expires_at}` : '';
    process.stderr.write(
      `Created ${kind} ${data.name}${until}. It is shown only now; use it as CTL_TOKEN=… or Authorization: Bearer ….\n`,
    );
  },
});

const list = command({
  name: 'list',
  description: 'List API tokens (names and lifetimes, never secrets)',
  examples: ['ctl token list', 'ctl token list --json'],
  args: { ...jsonFlag, ...apiFlag },
  async run({ args: a }) {
    const api = connect(a.api);
    const items = await allPages(
      async (limit, cursor) =>
        (await call(api, api.client.GET('/v0/tokens', { params: { query: { limit, cursor } } }))).data,
    );
    if (a.json) return json({ items, total: items.length });
    if (items.length === 0) return line('No API tokens (ctl token create NAME).');
    table<TokenInfo>(
      [
        { header: 'NAME', value: (t) => t.name, kind: 'id' },
        { header: 'ACCESS', value: (t) => (t.read_only ? 'read-only' : 'read-write') },
        { header: 'CREATED', value: (t) => t.created_at },
        { header: 'EXPIRES', value: (t) => (t.expired ? `expired ${t.expires_at}` : (t.expires_at ?? 'never')) },
        { header: 'BY', value: (t) => t.created_by },
      ],
      items,
    );
  },
});

const revoke = command({
  name: 'revoke',
  description: 'Revoke an API token: requests carrying it are refused from now on',
  examples: ['ctl token revoke ci'],
  args: { ...nameArg, ...jsonFlag, ...apiFlag },
  async run({ args: a }) {
    const api = connect(a.api);
    await call(api, api.client.DELETE('/v0/tokens/{name}', { params: { header: CSRF, path: { name: a.name } } }));
    if (a.json) return json({ name: a.name, revoked: true });
    line(`Revoked token ${a.name}`);
  },
});

export const tokenCommand = group({
  name: 'token',
  description: 'API tokens: access for other accounts and machines (managed by the supervisor’s own user)',
  examples: ['ctl token create ci --read-only --expires 30d', 'ctl token list', 'ctl token revoke ci'],
  commands: { create, list, revoke },
});
