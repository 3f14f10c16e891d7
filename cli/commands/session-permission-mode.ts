import { call, CSRF } from '../_api.js';
import { command } from '../_command.js';
import { inCityFlags } from '../_flags.js';
import { json, line } from '../_output.js';
import { cityPath, inCity } from '../_scope.js';

/** `ctl session permission-mode ID MODE`: what the session's program may do without asking. */
export const permissionMode = command({
  name: 'permission-mode',
  description: "Set a session's permission mode (one of its provider's): live where the program allows it",
  examples: ['ctl session permission-mode worker-1 default', 'ctl session permission-mode review acceptEdits'],
  args: {
    id: { type: 'positional', description: 'Session id, alias or session name', required: true, complete: 'sessions' },
    mode: {
      type: 'positional',
      description: "One of its provider's permission modes (ctl provider show NAME lists them)",
      required: true,
    },
    ...inCityFlags,
  },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/session/{id}/permission-mode', {
        params: { header: CSRF, path: { ...cityPath(city), id: a.id } },
        body: { permission_mode: a.mode },
      }),
    );
    if (a.json) return json(data);
    // The reason says whether it took effect at once or waits for the program's next start.
    line(`${data.id}: ${data.reason ?? `permission mode ${a.mode}`}`);
  },
});
