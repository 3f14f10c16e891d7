import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
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
 * Claude Code's ACP adapter (@agentclientprotocol/claude-agent-acp 0.101.0 as pinned, or
 * CTL_TEST_CLAUDE_ACP_VERSION) as the `claude-acp` preset runs it, offline, against the scripted model server's
 * Messages API. Its scratch HOME's settings put Claude Code in its `default` permission mode (the adapter's own
 * default is `auto`, which runs what a classifier deems safe without asking). It runs on the Node the tests run
 * on (ctl's own, ≥ 22, as the adapter declares).
 */
describe('sessions of the real Claude Code ACP adapter (against a scripted model server)', function () {
  this.timeout(3 * 60_000);
  const CITY = 'claude-acp';
  let city: SessionCity;
  let model: ModelServer;
  let home: string;
  let bin: string;
  let id: string;

  before(async function () {
    this.timeout(11 * 60_000); // a version named by CTL_TEST_CLAUDE_ACP_VERSION is installed on first use
    const cli = realCli('claude-acp');
    bin = cli.bin;
    process.stdout.write(`      claude-agent-acp ${cli.version} (${cli.source})\n`);
    model = await startModelServer();
    home = tempDir('ctl-claude-acp-home-');
    mkdirSync(join(home, '.claude'));
    writeFileSync(
      join(home, '.claude', 'settings.json'),
      JSON.stringify({ permissions: { defaultMode: 'default' } }, null, 2),
    );
    city = await startCliCity(CITY, {
      name: 'claude-acp-local',
      base: 'builtin:claude-acp',
      command: `${process.execPath} ${bin}`,
      env: {
        HOME: home,
        ANTHROPIC_BASE_URL: model.url,
        ANTHROPIC_API_KEY: 'test-key',
        CLAUDE_CODE_MAX_RETRIES: '0',
        DISABLE_TELEMETRY: '1',
        DISABLE_ERROR_REPORTING: '1',
        DISABLE_AUTOUPDATER: '1',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        // These tests run as root, where Claude Code refuses to start without it.
        IS_SANDBOX: '1',
      },
    });
    id = await createCliSession(city, { name: 'claude-acp-local' });
  });

  afterEach(function () {
    closeAllStreams();
  });

  after(async function () {
    await city?.sup.cleanup();
    await model?.close();
    expect(processesMentioning(bin), 'no adapter left behind').to.deep.equal([]);
    expect(processesMentioning(home), 'no Claude Code left behind').to.deep.equal([]);
    rmSync(home, { recursive: true, force: true });
  });

  it('answers a message; its session id is Claude Code’s own', async function () {
    await expectAnswer(city, model, id);
    expect((await session(city.api, id)).provider_session_key).to.match(/^[0-9a-f-]{36}$/);
    expect(model.requests.find((r) => r.userText === 'hello there')!.api, 'Anthropic Messages').to.equal('messages');
  });

  it('Bash asks permission: pending until respond; allow runs it, deny does not', async function () {
    await expectPermissionThroughRespond(city, id, city.dir);
  });

  it('after its controller is killed, the next adapter loads the conversation (session/load)', async function () {
    this.timeout(3 * TURN_MS);
    await expectLoadAfterRestart(city, CITY, model, id);
  });
});
