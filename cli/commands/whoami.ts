import { call, connect } from '../_api.js';
import { command } from '../_command.js';
import { apiFlag, jsonFlag } from '../_flags.js';
import { json, line } from '../_output.js';

export const whoamiCommand = command({
  name: 'whoami',
  description:
    "Who the supervisor takes you for: your account, token:NAME with CTL_TOKEN, or on a remote host your session's agent — the author your comments and events record",
  examples: [
    'ctl whoami                      # ann, or token:ci (read-only), or worker (session worker-1, city alpha)',
    'ctl whoami --json | jq -r .actor',
  ],
  args: { ...jsonFlag, ...apiFlag },
  async run({ args: a }) {
    const api = connect(a.api);
    const { data } = await call(api, api.client.GET('/v0/whoami'));
    if (a.json) return json(data);
    const notes = [
      ...(data.kind === 'session' ? [`session ${data.session_name ?? data.name}`, `city ${data.city}`] : []),
      ...(data.read_only ? ['read-only'] : []),
      ...(data.expires_at ? [`expires ${data.expires_at}`] : []),
    ];
    line(notes.length ? `${data.actor} (${notes.join(', ')})` : data.actor);
  },
});
