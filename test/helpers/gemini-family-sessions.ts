import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { startModelServer, type ModelServer } from './model-server.js';
import { isAlive } from './processes.js';
import { realCli } from './real-clis.js';
import { session, startSessionCity, terminalOf, type Accepted, type SessionCity } from './sessions.js';
import { tempDir } from './temp-dir.js';
import { waitUntil } from './wait.js';

// What the tests of Gemini CLI and its fork Qwen Code (test/sessions-gemini.test.ts, test/sessions-qwen.test.ts)
// set up alike: the CLI offline against the scripted model server, a home of its own holding its settings file,
// a city whose provider runs it, and one agent session (with a prompt) of it, started and running.

export interface RawEntry {
  kind: string;
  text?: string;
  resumed?: string;
}

export interface AgentSessionOfCli {
  city: SessionCity;
  model: ModelServer;
  /** The CLI's HOME. */
  home: string;
  /** A scratch directory for the files its commands make. */
  work: string;
  /** The agent session's id. */
  id: string;
  /** Every pid its program has had: none may outlive the city. */
  seenPids: Set<number>;
  /** The session's raw transcript. */
  raw(): Promise<RawEntry[]>;
  /** Stops the city and the model server, checks no program of the session is left, removes its folders. */
  close(): Promise<void>;
}

export interface CliSetup {
  cli: 'gemini' | 'qwen';
  /** The city's name (also the provider's: `<cli>-local`). */
  cityName: string;
  /** Its settings file's folder in its HOME (`.gemini`) and what the file holds. */
  settingsDir: string;
  settings: Record<string, unknown>;
  /** The provider's own part: its arguments and environment, given the model server and the CLI's HOME. */
  provider(model: ModelServer, home: string): { args_append?: string[]; env: Record<string, string> };
  /** The agent's `prompt.md`. */
  prompt: string;
  /** The supervisor's root, cities included (default: a new temporary directory; removed at close either way). */
  root?: string;
}

/**
 * The CLI (pinned, or the version its environment variable names: installed on first use, so a caller's `before`
 * needs minutes of timeout), printing the version under test, and an agent session `coder` of it, running.
 */
export async function startAgentSessionOfCli(setup: CliSetup): Promise<AgentSessionOfCli> {
  const cli = realCli(setup.cli);
  process.stdout.write(`      ${setup.cli} ${cli.version} (${cli.source})\n`);
  const model = await startModelServer();
  const home = tempDir(`ctl-${setup.cli}-home-`);
  const work = tempDir(`ctl-${setup.cli}-work-`);
  mkdirSync(join(home, setup.settingsDir));
  writeFileSync(join(home, setup.settingsDir, 'settings.json'), JSON.stringify(setup.settings));
  let city: SessionCity | undefined;
  const removeFolders = () => {
    rmSync(home, { recursive: true, force: true });
    rmSync(work, { recursive: true, force: true });
    if (setup.root !== undefined) rmSync(setup.root, { recursive: true, force: true });
  };
  let id: string;
  let firstPid: number;
  try {
    city = await startSessionCity(setup.cityName, '', undefined, setup.root);
    ({ id, pid: firstPid } = await startAgentSession(city, setup, cli.bin, model, home));
  } catch (err) {
    await city?.sup.cleanup();
    await model.close();
    removeFolders();
    throw err;
  }
  const started = city;
  const seenPids = new Set<number>([firstPid]);
  return {
    city: started,
    model,
    home,
    work,
    id,
    seenPids,
    async raw() {
      const reply = await started.api.get<{ messages: RawEntry[] }>(`/session/${id}/transcript?format=raw&tail=1000`);
      expect(reply.status).to.equal(200);
      return reply.body.messages;
    },
    async close() {
      await started.sup.cleanup();
      await model.close();
      for (const pid of seenPids) expect(isAlive(pid), `${setup.cli} ${pid} outlived its city`).to.equal(false);
      removeFolders();
    },
  };
}

/** The provider, its agent `coder` with its prompt, and a session of it, started: its id and its program's pid. */
async function startAgentSession(
  city: SessionCity,
  setup: CliSetup,
  bin: string,
  model: ModelServer,
  home: string,
): Promise<{ id: string; pid: number }> {
  const providerName = `${setup.cli}-local`;
  const created = await city.api.post('/providers', {
    name: providerName,
    base: `builtin:${setup.cli}`,
    command: bin,
    ...setup.provider(model, home),
  });
  expect(created.status, JSON.stringify(created.body)).to.equal(201);
  const agentDir = join(city.dir, 'agents', 'coder');
  mkdirSync(agentDir, { recursive: true });
  writeFileSync(join(agentDir, 'prompt.md'), `${setup.prompt}\n`);
  writeFileSync(
    join(agentDir, 'agent.toml'),
    `provider = "${providerName}"\nmin_active_sessions = 0\nmax_active_sessions = 1\n`,
  );
  await waitUntil('the agent to be known', async () => (await city.api.get('/agent/coder')).status === 200);
  // Its start (the ACP handshake included) takes a while on a busy machine: longer than createSession waits.
  const reply = await city.api.post<Accepted>('/sessions', { kind: 'agent', name: 'coder' });
  expect(reply.status, JSON.stringify(reply.body)).to.equal(202);
  const result = await terminalOf(city.api, reply.body.request_id, 60_000);
  expect(result.type, JSON.stringify(result.payload)).to.equal('request.result.session.create');
  const id = reply.body.session_id;
  const view = await session(city.api, id);
  expect(view).to.include({ running: true, state: 'active' });
  return { id, pid: view.pid! };
}
