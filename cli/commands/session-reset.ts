import { idAction } from '../_action.js';
import { CSRF } from '../_api.js';

/** `ctl session reset ID`: the same session on a fresh conversation (its provider's is no longer resumed). */
export const reset = idAction({
  name: 'reset',
  description: 'Give a session a fresh conversation: same session, its program restarted without resuming',
  examples: ['ctl session reset alp-7', 'ctl session reset review --json'],
  id: 'Session id, alias or session name',
  request: (api, path) => api.client.POST('/v0/city/{cityName}/session/{id}/reset', { params: { header: CSRF, path } }),
  done: (data) =>
    `Reset ${data.id}: ${data.restarted ? 'restarted on a new conversation' : 'its next start begins a new conversation'}` +
    ` (transcript entry ${data.transcript_seq})`,
});
