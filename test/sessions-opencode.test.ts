import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import {
  createCliSession,
  expectAnswer,
  expectLoadAfterRestart,
  expectPermissionThroughRespond,
  startCliCity,
  TURN_MS,
} from './helpers/acp-cli-sessions.js';
import { startModelServer, type ModelServer } from './helpers/model-server.js';
import { processesMentioning } from './helpers/processes.js';
import { realCli } from './helpers/real-clis.js';
import { session, type SessionCity } from './helpers/sessions.js';
import { closeAllStreams } from './helpers/sse.js';
import { tempDir } from './helpers/supervisor.js';

/**
 * OpenCode itself (opencode-ai 1.18.33 as pinned, or CTL_TEST_OPENCODE_VERSION) as the `opencode` preset runs it,
 * `opencode acp`, offline: its model is an OpenAI-compatible provider (bundled with it, nothing fetched) at the
 * scripted model server's Chat Completions API, and its configuration asks before bash runs. Its scratch HOME and
 * XDG directories keep it from the person's own, and the OPENCODE_DISABLE_* switches keep it from the network
 * (models.dev, plugins, LSP servers, updates).
 */
describe('sessions of the real OpenCode (opencode acp, against a scripted model server)', function () {
  this.timeout(3 * 60_000);
  const CITY = 'opencode';
  let city: SessionCity;
  let model: ModelServer;
  let home: string;
  let bin: string;
  let id: string;

  before(async function () {
    this.timeout(11 * 60_000); // a version named by CTL_TEST_OPENCODE_VERSION is installed on first use
    const cli = realCli('opencode');
    bin = cli.bin;
    process.stdout.write(`      opencode ${cli.version} (${cli.source})\n`);
    model = await startModelServer();
    home = tempDir('ctl-opencode-home-');
    const config = {
      provider: {
        scripted: {
          npm: '@ai-sdk/openai-compatible',
          options: { baseURL: `${model.url}/v1`, apiKey: 'test-key' },
          models: { 'scripted-model': { name: 'Scripted', tool_call: true } },
        },
      },
      model: 'scripted/scripted-model',
      small_model: 'scripted/scripted-model',
      autoupdate: false,
      share: 'disabled',
      permission: { bash: 'ask', edit: 'ask' },
    };
    city = await startCliCity(CITY, {
      name: 'opencode-local',
      base: 'builtin:opencode',
      command: bin,
      env: {
        HOME: home,
        XDG_CONFIG_HOME: join(home, '.config'),
        XDG_DATA_HOME: join(home, '.local', 'share'),
        XDG_CACHE_HOME: join(home, '.cache'),
        XDG_STATE_HOME: join(home, '.local', 'state'),
        OPENCODE_CONFIG_CONTENT: JSON.stringify(config),
        OPENCODE_DISABLE_AUTOUPDATE: '1',
        OPENCODE_DISABLE_MODELS_FETCH: '1',
        OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
        OPENCODE_DISABLE_SHARE: '1',
        OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
        OPENCODE_DISABLE_CLAUDE_CODE: '1',
      },
    });
    id = await createCliSession(city, { name: 'opencode-local' });
  });

  afterEach(function () {
    closeAllStreams();
  });

  after(async function () {
    await city?.sup.cleanup();
    await model?.close();
    expect(processesMentioning(bin), 'no opencode left behind').to.deep.equal([]);
    rmSync(home, { recursive: true, force: true });
  });

  it('answers a message; its session id is OpenCode’s own', async function () {
    await expectAnswer(city, model, id);
    expect((await session(city.api, id)).provider_session_key).to.match(/^ses_\w+$/);
    const asked = model.requests.find((r) => r.userText === 'hello there')!;
    expect(asked.api, 'OpenAI Chat Completions').to.equal('chat');
  });

  it('bash asks permission: pending until respond; allow runs it, deny does not', async function () {
    await expectPermissionThroughRespond(city, id, city.dir);
  });

  it('after its controller is killed, the next OpenCode loads the conversation (session/load)', async function () {
    this.timeout(3 * TURN_MS);
    await expectLoadAfterRestart(city, CITY, model, id);
  });
});
