import type { SessionAgentGetResponse, TranscriptEntry } from '../../shared/dto/sessions.js';
import { call } from '../_api.js';
import { command } from '../_command.js';
import { inCityFlags } from '../_flags.js';
import { json, line, table } from '../_output.js';
import { cityPath, inCity } from '../_scope.js';
import type { Api } from '../_types.js';
import type { CityInfo } from '../../shared/dto/cities.js';

async function agentOf(api: Api, city: CityInfo, id: string, agentId: string): Promise<SessionAgentGetResponse> {
  const { data } = await call(
    api,
    api.client.GET('/v0/city/{cityName}/session/{id}/agents/{agentId}', {
      params: { path: { ...cityPath(city), id, agentId } },
    }),
  );
  return data;
}

function entryLine(entry: TranscriptEntry): string {
  const text = typeof entry.text === 'string' ? entry.text : '';
  const status = typeof entry.status === 'string' ? entry.status : '';
  return `${entry.seq} ${entry.ts} ${entry.kind} ${entry.kind === 'turn_end' ? status : text}`.trimEnd();
}

/** `ctl session agents ID [AGENT]`: a session's subagents, or one subagent's own transcript. */
export const agents = command({
  name: 'agents',
  description: "A session's subagents (Claude Code's Task/Agent tool), or one subagent's own turns",
  examples: [
    'ctl session agents alp-7',
    'ctl session agents alp-7 a1e2f1900a4a7c736',
    'ctl session agents alp-7 --json',
  ],
  args: {
    id: { type: 'positional', description: 'Session id, alias or session name', required: true, complete: 'sessions' },
    agent: { type: 'positional', description: 'A subagent id (from the list): its transcript', required: false },
    ...inCityFlags,
  },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    if (a.agent) {
      const agent = await agentOf(api, city, a.id, a.agent);
      if (a.json) return json(agent);
      line(`Status: ${agent.status}`);
      for (const entry of agent.messages) line(entryLine(entry));
      return;
    }
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/session/{id}/agents', { params: { path: { ...cityPath(city), id: a.id } } }),
    );
    if (a.json) return json(data);
    if (data.agents.length === 0) return line('No subagents.');
    const rows = await Promise.all(
      data.agents.map(async (m) => ({ ...m, ...(await agentOf(api, city, a.id, m.agent_id)) })),
    );
    table(
      [
        { header: 'AGENT', value: (r) => r.agent_id, kind: 'id' },
        { header: 'TOOL CALL', value: (r) => r.parent_tool_use_id, kind: 'id' },
        { header: 'STATUS', value: (r) => r.status, kind: 'status' },
        {
          header: 'TASK',
          value: (r) => {
            const start = r.messages.find((e) => e.kind === 'start');
            return typeof start?.description === 'string' ? start.description : '';
          },
          kind: 'text',
        },
      ],
      rows,
    );
  },
});
