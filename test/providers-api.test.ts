import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { expect } from 'chai';
import type { components } from '../shared/generated/api-types.js';
import { packageRoot } from '../shared/paths.js';
import { CityApi, expectProblem, type Envelope } from './helpers/city-api.js';
import { CSRF, TestSupervisor, tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

// Providers over the API (api-contract.md §8.12, work-model.md §3.1–§3.2): listing, the public view, create,
// update and delete writing `[providers.<name>]` into the city's own `city.toml` (everything else in it kept to
// the byte), the controller picking each write up at once, and readiness of the city's custom providers.

type Provider = components['schemas']['ProviderResponse'];
type PublicProvider = components['schemas']['ProviderPublicResponse'];
type Readiness = components['schemas']['ProviderReadinessResponse'];

const ECHO = join(packageRoot, 'examples', 'agents', 'echo.sh');
const STATUSES = ['configured', 'needs_auth', 'not_installed', 'invalid_configuration', 'probe_error'];

/** A city.toml as a person writes one: comments everywhere, blank lines, a preset adjusted, a provider of theirs. */
const CITY_TOML = `# The providers city — written by hand.

[workspace]
start_command = "sleep 3600"   # the city's own program
prefix = "pc"

# Claude, with the model we pay for.
[providers.claude]
base = "builtin:claude"
option_defaults = { model = "opus" }  # keep

# Our own echo bot.
[providers.mine]
display_name = "Mine"
command = "${ECHO}"
# quiet: answers come fast
quiet_ms = 200
env = { GREETING = "hi" }

# Ann uses mine.
[[agent]]
name = "ann"
provider = "mine"

[events]
rotation_max_bytes = 100000000 # big
`;

/**
 * `text` without the table `[providers.<name>]`: its header, the lines up to the next blank line or header, and
 * the blank line before it when one is there (a comment above it is not the table's) — an independent reading of
 * "the edited table", to compare the rest byte for byte.
 */
function withoutTable(text: string, name: string): string {
  const lines = text.split('\n');
  const header = lines.findIndex((l) => l === `[providers.${name}]`);
  if (header < 0) return text;
  let end = header + 1;
  while (end < lines.length && lines[end] !== '' && !lines[end].startsWith('[')) end++;
  // Sub-tables of the provider are its too.
  while (end < lines.length && lines[end] === '' && lines[end + 1]?.startsWith(`[providers.${name}.`)) {
    end += 2;
    while (end < lines.length && lines[end] !== '' && !lines[end].startsWith('[')) end++;
  }
  let start = header;
  if (start > 0 && lines[start - 1] === '' && lines[end] === '') start--;
  return [...lines.slice(0, start), ...lines.slice(end)].join('\n');
}

/** The lines of `[providers.<name>]` in `text` (its header to the next blank line or header). */
function tableLines(text: string, name: string): string[] {
  const lines = text.split('\n');
  const header = lines.findIndex((l) => l === `[providers.${name}]`);
  expect(header, `[providers.${name}] in\n${text}`).to.be.at.least(0);
  let end = header + 1;
  while (end < lines.length && lines[end] !== '' && !lines[end].startsWith('[')) end++;
  return lines.slice(header, end);
}

describe('providers over the API', function () {
  this.timeout(60_000);
  let sup: TestSupervisor;
  let binDir: string;
  let seq = 0;

  /** A running city of its own (`city.toml` = `toml`), registered with the supervisor. */
  async function cityWith(toml = CITY_TOML): Promise<{ api: CityApi; file: string }> {
    const name = `prov-${++seq}`;
    const dir = sup.cityDir(name);
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'city.toml');
    writeFileSync(file, toml, { mode: 0o644 });
    chmodSync(file, 0o644);
    const { response, error } = await sup.api.POST('/v0/cities/register', {
      params: { header: CSRF },
      body: { path: dir, name },
    });
    if (response.status !== 201) throw new Error(`register ${response.status}: ${JSON.stringify(error)}`);
    await waitUntil(`${name} to run`, async () => (await sup.city(name))?.running);
    return { api: new CityApi(sup, name), file };
  }

  before(async function () {
    binDir = tempDir('ctl-provider-bin-');
    writeFileSync(join(binDir, 'ctl-test-agent'), '#!/bin/sh\nexec cat\n', { mode: 0o755 });
    sup = await TestSupervisor.start({ env: { PATH: `${binDir}${delimiter}${process.env.PATH ?? ''}` } });
  });

  after(async function () {
    await sup?.cleanup();
  });

  describe('listing', function () {
    let api: CityApi;
    before(async function () {
      ({ api } = await cityWith());
    });

    it('GET /providers: the presets, the city’s own, and `default` for the start command, resolved', async function () {
      const reply = await api.get<{ items: Provider[]; total: number; next_cursor?: string }>('/providers');
      expect(reply.status).to.equal(200);
      const byName = new Map(reply.body.items.map((p) => [p.name, p]));
      expect([...byName.keys()]).to.deep.equal([
        'claude',
        'claude-acp',
        'codex',
        'codex-acp',
        'default',
        'gemini',
        'generic',
        'mine',
        'opencode',
        'qwen',
      ]);
      expect(reply.body.total).to.equal(10);
      expect(reply.body.next_cursor).to.equal(undefined);

      const claude = byName.get('claude')!;
      expect(claude).to.include({ builtin: true, city_level: true, origin: 'builtin+city', command: 'claude' });
      expect(claude.protocol).to.equal('stream-json');
      expect(claude.option_defaults).to.deep.equal({ model: 'opus' });
      expect(claude.permission_modes).to.have.property('plan');
      expect(claude.resume_args).to.deep.equal(['--resume', '{session_key}']);
      expect(byName.get('codex')).to.include({ builtin: true, city_level: false, origin: 'builtin' });

      const mine = byName.get('mine')!;
      expect(mine).to.deep.include({
        builtin: false,
        city_level: true,
        origin: 'city',
        display_name: 'Mine',
        command: ECHO,
        args: [],
        env: { GREETING: 'hi' },
        protocol: 'text',
        runtime: 'pipe',
        prompt_mode: 'stdin',
        quiet_ms: 200,
        ready_delay_ms: 200,
      });
      expect(byName.get('default')).to.include({ command: 'sleep 3600', protocol: 'text', builtin: false });
    });

    it('GET /provider/{name}: one provider; an unknown one is 404 provider-not-found', async function () {
      const reply = await api.get<Provider>('/provider/mine');
      expect(reply.status).to.equal(200);
      expect(reply.body.name).to.equal('mine');
      expect(reply.body.command).to.equal(ECHO);
      const codex = await api.get<Provider>('/provider/codex');
      expect(codex.body).to.include({ name: 'codex', protocol: 'codex-exec', origin: 'builtin' });
      expectProblem(await api.get('/provider/nope'), 404, 'provider-not-found', {
        detail: 'not_found: provider not found: nope',
      });
    });

    it('GET /providers/public: names, protocol, permission modes and defaults; no command line, flags or env', async function () {
      const reply = await api.get<{ items: PublicProvider[]; total: number }>('/providers/public');
      expect(reply.status).to.equal(200);
      expect(reply.body.total).to.equal(10);
      const allowed = [
        'name',
        'builtin',
        'city_level',
        'display_name',
        'protocol',
        'permission_modes',
        'default_permission_mode',
        'effective_defaults',
        'options_schema',
      ];
      for (const item of reply.body.items) expect(allowed, JSON.stringify(item)).to.include.members(Object.keys(item));
      const text = JSON.stringify(reply.body);
      for (const secret of [ECHO, 'GREETING', '--permission-mode', '--resume', '--sandbox', 'sleep 3600', '-p']) {
        expect(text, secret).to.not.include(secret);
      }
      const claude = reply.body.items.find((p) => p.name === 'claude')!;
      expect(claude.permission_modes).to.include.members(['default', 'plan', 'acceptEdits', 'bypassPermissions']);
      expect(claude.effective_defaults).to.deep.equal({ model: 'opus', permission_mode: 'default' });
      // Every option it offers, its default among them: the flags behind them are never shown.
      expect(claude.options_schema.map((o) => o.key)).to.deep.equal([
        'model',
        'effort',
        'max_turns',
        'permission_mode',
      ]);
      expect(claude.options_schema[0]).to.deep.include({ key: 'model', type: 'string', default: 'opus' });
      expect(claude.options_schema[3]).to.deep.include({ key: 'permission_mode', type: 'select', default: 'default' });
      expect(claude.options_schema[3].choices.map((c) => c.value)).to.include('plan');
      expect(text).to.not.include('--model');
      const mine = reply.body.items.find((p) => p.name === 'mine')!;
      expect(mine).to.deep.equal({
        name: 'mine',
        builtin: false,
        city_level: true,
        display_name: 'Mine',
        protocol: 'text',
        permission_modes: [],
        effective_defaults: {},
        options_schema: [],
      });
    });

    it('pages by name with limit and cursor; a bad cursor is a 400, a bad limit a 422', async function () {
      const names: string[] = [];
      let cursor: string | undefined;
      for (let pages = 0; pages < 10; pages++) {
        const reply = await api.get<{ items: Provider[]; total: number; next_cursor?: string }>(
          `/providers?limit=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        );
        expect(reply.status).to.equal(200);
        expect(reply.body.total).to.equal(10);
        names.push(...reply.body.items.map((p) => p.name));
        cursor = reply.body.next_cursor;
        if (!cursor) break;
      }
      expect(names).to.deep.equal([
        'claude',
        'claude-acp',
        'codex',
        'codex-acp',
        'default',
        'gemini',
        'generic',
        'mine',
        'opencode',
        'qwen',
      ]);
      const publicPage = await api.get<{ items: PublicProvider[]; next_cursor?: string }>('/providers/public?limit=5');
      expect(publicPage.body.items).to.have.length(5);
      expect(publicPage.body.next_cursor).to.match(/^v1:/);
      expectProblem(await api.get('/providers?cursor=garbage'), 400, 'invalid-cursor');
      expectProblem(await api.get('/providers?limit=1001'), 422, 'validation-failed', { location: 'query.limit' });
    });
  });

  describe('create', function () {
    it('{name, command} is a custom provider on the pipe runtime speaking text, and a session can start it at once', async function () {
      const { api, file } = await cityWith();
      const before = readFileSync(file, 'utf8');
      const reply = await api.post('/providers', { name: 'echoer', command: ECHO });
      expect(reply.status, JSON.stringify(reply.body)).to.equal(201);
      expect(reply.body).to.deep.equal({ status: 'created', provider: 'echoer' });

      // Written as a table of its own; every other byte of the file as it was, and its mode.
      const after = readFileSync(file, 'utf8');
      expect(tableLines(after, 'echoer')).to.deep.equal(['[providers.echoer]', `command = "${ECHO}"`]);
      expect(withoutTable(after, 'echoer')).to.equal(before);
      expect(statSync(file).mode & 0o777).to.equal(0o644);

      const provider = await api.get<Provider>('/provider/echoer');
      expect(provider.body).to.deep.include({
        name: 'echoer',
        builtin: false,
        city_level: true,
        origin: 'city',
        command: ECHO,
        protocol: 'text',
        runtime: 'pipe',
        prompt_mode: 'stdin',
      });
      const list = await api.get<{ items: Provider[] }>('/providers');
      expect(list.body.items.map((p) => p.name)).to.include('echoer');

      // The next session start sees it, without a restart.
      const created = await api.post<{ request_id: string; session_id: string }>('/sessions', {
        kind: 'provider',
        name: 'echoer',
        message: 'hello there',
      });
      expect(created.status, JSON.stringify(created.body)).to.equal(202);
      const result = await waitUntil('request.result.session.create', async () => {
        const events = await api.events('request.result.session.create');
        return events.find((e) => e.payload.request_id === created.body.request_id);
      });
      expect(result.payload.session_id).to.equal(created.body.session_id);
      await waitUntil('echo: hello there in the transcript', async () => {
        const t = await api.get<{ turns: { role: string; text: string }[] }>(
          `/session/${created.body.session_id}/transcript`,
        );
        return t.body.turns?.some((turn) => turn.text.includes('echo: hello there'));
      });
    });

    it('with a base: inherits a preset and changes what it sets', async function () {
      const { api, file } = await cityWith();
      const before = readFileSync(file, 'utf8');
      const reply = await api.post('/providers', {
        name: 'careful',
        base: 'builtin:claude',
        display_name: 'Careful Claude',
        args_append: ['--model', 'haiku'],
        default_permission_mode: 'plan',
        env: { A: '1' },
      });
      expect(reply.status, JSON.stringify(reply.body)).to.equal(201);
      const p = (await api.get<Provider>('/provider/careful')).body;
      expect(p).to.include({ protocol: 'stream-json', command: 'claude', default_permission_mode: 'plan' });
      expect(p.args.slice(-2)).to.deep.equal(['--model', 'haiku']);
      expect(p.args[0]).to.equal('-p');
      expect(p.env).to.deep.equal({ CLAUDE_CODE_FORWARD_SUBAGENT_TEXT: '1', A: '1' });
      const after = readFileSync(file, 'utf8');
      expect(tableLines(after, 'careful')).to.deep.equal([
        '[providers.careful]',
        'base = "builtin:claude"',
        'display_name = "Careful Claude"',
        'args_append = [ "--model", "haiku" ]',
        'env = { A = "1" }',
        'default_permission_mode = "plan"',
      ]);
      expect(withoutTable(after, 'careful')).to.equal(before);
    });

    it('refuses a name in use (409), and each invalid setting with a 422 naming it; the file stays as it was', async function () {
      const { api, file } = await cityWith();
      const before = readFileSync(file, 'utf8');
      expectProblem(await api.post('/providers', { name: 'mine', command: 'x' }), 409, 'conflict-wrong-state', {
        detail: 'conflict: provider already exists: mine',
      });
      expectProblem(await api.post('/providers', { name: 'gemini', command: 'x' }), 409, 'conflict-wrong-state');
      expectProblem(await api.post('/providers', { name: 'default', command: 'x' }), 409, 'conflict-wrong-state');
      const invalid: [Record<string, unknown>, string][] = [
        [{ name: 'bad name', command: 'x' }, 'body.name'],
        [{ command: 'x' }, 'body.name'],
        [{ name: 'nocmd' }, 'body.command'],
        [{ name: 'blank', command: '  ' }, 'body.command'],
        [{ name: 'orphan', base: 'nothing-here' }, 'body.base'],
        [{ name: 'orphan', base: 'builtin:nope' }, 'body.base'],
        [{ name: 're', command: 'x', pending_pattern: '(unclosed' }, 'body.pending_pattern'],
        [{ name: 'proto', command: 'x', protocol: 'smoke-signals' }, 'body.protocol'],
        [{ name: 'rt', command: 'x', runtime: 'podman' }, 'body.runtime'],
        [{ name: 'rt', command: 'x', runtime: 'tmux' }, 'body.screen_rules'],
        [{ name: 'flag', command: 'x', prompt_mode: 'flag' }, 'body.prompt_flag'],
        [{ name: 'mode', command: 'x', default_permission_mode: 'yolo' }, 'body.default_permission_mode'],
        [{ name: 'quiet', command: 'x', quiet_ms: -1 }, 'body.quiet_ms'],
        [{ name: 'quiet', command: 'x', quiet_ms: 1.5 }, 'body.quiet_ms'],
        [{ name: 'args', command: 'x', args: 'not-a-list' }, 'body.args'],
        [{ name: 'extra', command: 'x', colour: 'red' }, 'body.colour'],
      ];
      for (const [body, location] of invalid) {
        const problem = expectProblem(await api.post('/providers', body), 422, 'validation-failed', { location });
        expect(problem.errors, JSON.stringify(problem)).to.not.equal(undefined);
      }
      const cycle = expectProblem(
        await api.post('/providers', { name: 'selfish', base: 'selfish' }),
        422,
        'validation-failed',
        { location: 'body.base' },
      );
      expect(cycle.detail).to.include('cycle');
      expect(readFileSync(file, 'utf8')).to.equal(before);
      const list = await api.get<{ total: number }>('/providers');
      expect(list.body.total).to.equal(10);
    });

    it('an Idempotency-Key replays the first answer; with another body it is a 422', async function () {
      const { api, file } = await cityWith();
      const key = { 'Idempotency-Key': 'create-once' };
      const first = await api.post('/providers', { name: 'once', command: 'cat' }, key);
      expect(first.status).to.equal(201);
      const again = await api.post('/providers', { name: 'once', command: 'cat' }, key);
      expect(again.status).to.equal(201);
      expect(again.body).to.deep.equal(first.body);
      expectProblem(await api.post('/providers', { name: 'twice', command: 'cat' }, key), 422, 'idempotency-mismatch', {
        detail: 'idempotency_mismatch:',
      });
      expect(readFileSync(file, 'utf8').match(/^\[providers\.once\]$/gm)).to.have.length(1);
      expect(readFileSync(file, 'utf8')).to.not.include('twice');
    });
  });

  describe('update', function () {
    it('merges settings into the city’s table, keeping the comments inside it and every byte outside it', async function () {
      const { api, file } = await cityWith();
      const before = readFileSync(file, 'utf8');
      const reply = await api.patch<Provider>('/provider/mine', {
        args: ['--loud'],
        env: { EXTRA: 'x' },
        display_name: null,
      });
      expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
      expect(reply.body).to.deep.include({
        name: 'mine',
        args: ['--loud'],
        env: { GREETING: 'hi', EXTRA: 'x' },
        display_name: 'mine',
        quiet_ms: 200,
      });
      const after = readFileSync(file, 'utf8');
      expect(tableLines(after, 'mine')).to.deep.equal([
        '[providers.mine]',
        `command = "${ECHO}"`,
        '# quiet: answers come fast',
        'quiet_ms = 200',
        'env = { GREETING = "hi", EXTRA = "x" }',
        'args = [ "--loud" ]',
      ]);
      expect(withoutTable(after, 'mine')).to.equal(withoutTable(before, 'mine'));
      // GET answers the same as the PATCH did.
      expect((await api.get<Provider>('/provider/mine')).body).to.deep.equal(reply.body);
    });

    it('a built-in preset the city has no table for gets one that adjusts it', async function () {
      const { api, file } = await cityWith();
      const before = readFileSync(file, 'utf8');
      const reply = await api.patch<Provider>('/provider/codex', { option_defaults: { model: 'gpt-5' } });
      expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
      expect(reply.body).to.deep.include({
        name: 'codex',
        builtin: true,
        city_level: true,
        origin: 'builtin+city',
        command: 'codex',
        protocol: 'codex-exec',
        option_defaults: { model: 'gpt-5' },
      });
      const after = readFileSync(file, 'utf8');
      expect(tableLines(after, 'codex')).to.deep.equal(['[providers.codex]', 'option_defaults = { model = "gpt-5" }']);
      expect(withoutTable(after, 'codex')).to.equal(before);
    });

    it('404 for an unknown provider, 409 for the start command’s `default`, 422 naming a bad setting', async function () {
      const { api, file } = await cityWith();
      const before = readFileSync(file, 'utf8');
      expectProblem(await api.patch('/provider/nope', { command: 'x' }), 404, 'provider-not-found', {
        detail: 'not_found: provider not found: nope',
      });
      expectProblem(await api.patch('/provider/default', { args: ['x'] }), 409, 'conflict-wrong-state');
      expectProblem(await api.patch('/provider/mine', { protocol: 'smoke' }), 422, 'validation-failed', {
        location: 'body.protocol',
      });
      expectProblem(await api.patch('/provider/mine', { command: null }), 422, 'validation-failed', {
        location: 'body.command',
      });
      expectProblem(await api.patch('/provider/mine', { name: 'renamed' }), 422, 'validation-failed');
      expect(readFileSync(file, 'utf8')).to.equal(before);
    });

    it('a base that would close a cycle is a 422 naming base; a change that breaks another provider is a 409', async function () {
      const { api, file } = await cityWith();
      expect((await api.post('/providers', { name: 'a1', command: 'cat' })).status).to.equal(201);
      expect((await api.post('/providers', { name: 'a2', base: 'a1' })).status).to.equal(201);
      expect(
        (await api.post('/providers', { name: 'a3', base: 'a1', permission_modes: { loud: [] } })).status,
      ).to.equal(201);
      expect(
        (await api.post('/providers', { name: 'a4', base: 'a3', default_permission_mode: 'loud' })).status,
      ).to.equal(201);
      const before = readFileSync(file, 'utf8');
      const cycle = expectProblem(await api.patch('/provider/a1', { base: 'a2' }), 422, 'validation-failed', {
        location: 'body.base',
      });
      expect(cycle.detail).to.include('cycle');
      // a4's default mode comes from a3's table: a3 may not lose it.
      const broken = expectProblem(
        await api.patch('/provider/a3', { permission_modes: null }),
        409,
        'conflict-wrong-state',
      );
      expect(broken.detail).to.include('a4');
      expect(readFileSync(file, 'utf8')).to.equal(before);
    });

    it('leaves a running session alone; the next session of the provider starts with the new settings', async function () {
      const { api } = await cityWith();
      const first = await api.post<{ request_id: string; session_id: string }>('/sessions', {
        kind: 'provider',
        name: 'mine',
      });
      expect(first.status).to.equal(202);
      await waitUntil('the session to run', async () => {
        const events = await api.events('request.result.session.create');
        return events.some((e) => e.payload.request_id === first.body.request_id);
      });
      const running = await api.get<{ running: boolean; pid: number }>(`/session/${first.body.session_id}`);
      expect(running.body.running).to.equal(true);

      // echo.sh prints its ready marker (ECHO_READY) once it starts: the next session's first output shows it.
      const patched = await api.patch<Provider>('/provider/mine', { env: { ECHO_READY: 'READY>' } });
      expect(patched.status).to.equal(200);

      const still = await api.get<{ running: boolean; pid: number }>(`/session/${first.body.session_id}`);
      expect(still.body).to.include({ running: true, pid: running.body.pid });
      const sent = await api.post(`/session/${first.body.session_id}/messages`, { message: 'still here' });
      expect(sent.status).to.equal(202);
      await waitUntil('the old session to answer', async () => {
        const t = await api.get<{ turns: { text: string }[] }>(`/session/${first.body.session_id}/transcript`);
        return t.body.turns?.some((turn) => turn.text.includes('echo: still here'));
      });

      const second = await api.post<{ request_id: string; session_id: string }>('/sessions', {
        kind: 'provider',
        name: 'mine',
        message: 'new one',
      });
      await waitUntil('the new session to answer', async () => {
        const t = await api.get<{ turns: { text: string }[] }>(`/session/${second.body.session_id}/transcript`);
        return t.body.turns?.some((turn) => turn.text.includes('echo: new one'));
      });
      const raw = await api.get<{ messages: unknown[] }>(`/session/${second.body.session_id}/transcript?format=raw`);
      expect(JSON.stringify(raw.body.messages)).to.include('READY>');
      const old = await api.get<{ messages: unknown[] }>(`/session/${first.body.session_id}/transcript?format=raw`);
      expect(JSON.stringify(old.body.messages)).to.not.include('READY>');
    });
  });

  describe('delete', function () {
    it('removes the city’s table, and only it', async function () {
      const { api, file } = await cityWith();
      expect((await api.post('/providers', { name: 'temp', command: 'cat', args: ['-u'] })).status).to.equal(201);
      const before = readFileSync(file, 'utf8');
      const reply = await api.del('/provider/temp');
      expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
      expect(reply.body).to.deep.equal({ status: 'ok' });
      expect(readFileSync(file, 'utf8')).to.equal(withoutTable(before, 'temp'));
      expectProblem(await api.get('/provider/temp'), 404, 'provider-not-found');
    });

    it('a preset the city adjusted goes back to the preset; a pure preset cannot be deleted', async function () {
      const { api, file } = await cityWith();
      const before = readFileSync(file, 'utf8');
      expect((await api.del('/provider/claude')).status).to.equal(200);
      expect(readFileSync(file, 'utf8')).to.equal(withoutTable(before, 'claude'));
      const claude = await api.get<Provider>('/provider/claude');
      expect(claude.body).to.include({ origin: 'builtin', city_level: false });
      expect(claude.body.option_defaults).to.deep.equal({});
      expectProblem(await api.del('/provider/claude'), 409, 'conflict-wrong-state', {
        detail: 'conflict: provider claude is built in and cannot be deleted',
      });
      expectProblem(await api.del('/provider/gemini'), 409, 'conflict-wrong-state');
    });

    it('409 naming who still uses it (an agent, another provider’s base), 409 for `default`, 404 for none', async function () {
      const { api, file } = await cityWith();
      expect((await api.post('/providers', { name: 'child', base: 'mine' })).status).to.equal(201);
      const before = readFileSync(file, 'utf8');
      const used = expectProblem(await api.del('/provider/mine'), 409, 'conflict-wrong-state');
      expect(used.detail).to.include('agent ann');
      expect(used.detail).to.include('provider child');
      expectProblem(await api.del('/provider/default'), 409, 'conflict-wrong-state');
      expectProblem(await api.del('/provider/nope'), 404, 'provider-not-found');
      expect(readFileSync(file, 'utf8')).to.equal(before);
    });
  });

  describe('writing city.toml', function () {
    it('serializes concurrent writes: none is lost', async function () {
      const { api, file } = await cityWith();
      const names = Array.from({ length: 12 }, (_, i) => `par-${i}`);
      const replies = await Promise.all(names.map((name) => api.post('/providers', { name, command: 'cat' })));
      expect(replies.map((r) => r.status)).to.deep.equal(names.map(() => 201));
      const patches = await Promise.all(
        names.map((name, i) => api.patch('/provider/mine', { env: { [`K${i}`]: name } })),
      );
      expect(patches.map((r) => r.status)).to.deep.equal(names.map(() => 200));
      const text = readFileSync(file, 'utf8');
      for (const name of names) expect(text).to.include(`[providers.${name}]`);
      const mine = (await api.get<Provider>('/provider/mine')).body;
      expect(Object.keys(mine.env).sort()).to.deep.equal(['GREETING', ...names.map((_, i) => `K${i}`)].sort());
      const list = await api.get<{ items: Provider[] }>('/providers?limit=1000');
      expect(list.body.items.map((p) => p.name)).to.include.members(names);
    });

    it('a city.toml broken by hand is a 409 and is not overwritten; the controller keeps what it runs', async function () {
      const { api, file } = await cityWith();
      const broken = readFileSync(file, 'utf8') + '\n[providers.half\ncommand = \n';
      writeFileSync(file, broken);
      const problem = expectProblem(
        await api.post('/providers', { name: 'new', command: 'cat' }),
        409,
        'conflict-wrong-state',
        { detail: 'conflict: city.toml is not valid' },
      );
      expect(problem.detail).to.include('fix it by hand');
      expectProblem(await api.patch('/provider/mine', { args: [] }), 409, 'conflict-wrong-state');
      expect(readFileSync(file, 'utf8')).to.equal(broken);
      expect((await api.get<Provider>('/provider/mine')).status).to.equal(200);

      // Valid TOML with a provider that does not resolve is broken too.
      const unresolved = CITY_TOML + '\n[providers.lost]\nbase = "nowhere"\n';
      writeFileSync(file, unresolved);
      const again = expectProblem(await api.del('/provider/mine'), 409, 'conflict-wrong-state', {
        detail: 'conflict: city.toml is not valid',
      });
      expect(again.detail).to.include('nowhere');
      expect(readFileSync(file, 'utf8')).to.equal(unresolved);
    });

    it('what the API wrote is what the controller reads at startup', async function () {
      const { api, file } = await cityWith();
      expect((await api.post('/providers', { name: 'kept', command: ECHO, quiet_ms: 100 })).status).to.equal(201);
      expect((await api.patch('/provider/gemini', { display_name: 'Gemini (ours)' })).status).to.equal(200);
      const written = readFileSync(file, 'utf8');
      const stopped = await sup.api.POST('/v0/city/{cityName}/stop', {
        params: { header: CSRF, path: { cityName: api.name } },
      });
      expect(stopped.response.status).to.equal(200);
      const started = await sup.api.POST('/v0/city/{cityName}/start', {
        params: { header: CSRF, path: { cityName: api.name } },
      });
      expect(started.response.status, JSON.stringify(started.error)).to.equal(200);
      expect((await api.get<Provider>('/provider/kept')).body).to.include({ command: ECHO, quiet_ms: 100 });
      expect((await api.get<Provider>('/provider/gemini')).body.display_name).to.equal('Gemini (ours)');
      expect(readFileSync(file, 'utf8')).to.equal(written);
      // GET /config, read again from the file, shows the tables too.
      const config = await api.get<{ providers: Record<string, Record<string, unknown>> }>('/config');
      expect(config.body.providers.kept).to.deep.equal({ command: ECHO, quiet_ms: 100 });
    });

    it('GET /config reflects a write at once, without a restart', async function () {
      const { api } = await cityWith();
      expect((await api.post('/providers', { name: 'fresh', command: 'cat' })).status).to.equal(201);
      const config = await api.get<{ providers: Record<string, Record<string, unknown>> }>('/config');
      expect(config.body.providers.fresh).to.deep.equal({ command: 'cat' });
      expect(Object.keys(config.body.providers)).to.include.members(['claude', 'mine', 'fresh']);
    });
  });

  describe('readiness', function () {
    it('a custom provider is configured when its program is found (on PATH or as a path), not_installed otherwise', async function () {
      const { api } = await cityWith();
      for (const [name, command] of [
        ['on-path', 'ctl-test-agent --flag'],
        ['by-path', ECHO],
        ['shelled', 'GREETING=hi ctl-test-agent | cat'],
        ['missing', 'ctl-no-such-agent-anywhere'],
        ['missing-path', '/nonexistent/dir/agent.sh'],
      ]) {
        expect((await api.post('/providers', { name, command })).status, name).to.equal(201);
      }
      const reply = await api.get<Readiness>(
        '/provider-readiness?providers=on-path,by-path,shelled,missing,missing-path&fresh=true',
      );
      expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
      const p = reply.body.providers;
      expect(Object.keys(p).sort()).to.deep.equal(['by-path', 'missing', 'missing-path', 'on-path', 'shelled']);
      expect(p['on-path']).to.deep.equal({
        display_name: 'on-path',
        status: 'configured',
        detail: join(binDir, 'ctl-test-agent'),
      });
      expect(p['by-path']).to.include({ status: 'configured', detail: ECHO });
      expect(p.shelled).to.include({ status: 'configured', detail: join(binDir, 'ctl-test-agent') });
      expect(p.missing).to.include({ status: 'not_installed' });
      expect(p.missing.detail).to.include('ctl-no-such-agent-anywhere not found on PATH');
      expect(p['missing-path']).to.include({ status: 'not_installed' });
    });

    it('by default covers every provider of the city; built-ins keep their real probes', async function () {
      const { api } = await cityWith();
      const reply = await api.get<Readiness>('/provider-readiness');
      expect(reply.status).to.equal(200);
      const p = reply.body.providers;
      expect(Object.keys(p).sort()).to.deep.equal([
        'claude',
        'claude-acp',
        'codex',
        'codex-acp',
        'default',
        'gemini',
        'generic',
        'mine',
        'opencode',
        'qwen',
      ]);
      for (const item of Object.values(p)) expect(STATUSES).to.include(item.status);
      expect(p.mine).to.include({ display_name: 'Mine', status: 'configured', detail: ECHO });
      expect(p.default.status).to.equal('configured');
      expect(p.claude.display_name).to.equal('Claude Code');
      // The probe-only names of the reference are still known; anything else is a 400.
      const pi = await api.get<Readiness>('/provider-readiness?providers=pi');
      expect(Object.keys(pi.body.providers)).to.deep.equal(['pi']);
      expectProblem(await api.get('/provider-readiness?providers=mine,nope'), 400, 'invalid-request', {
        detail: 'invalid: unknown providers: nope',
      });
    });

    it('a provider city.toml on disk does not define validly is invalid_configuration, with why', async function () {
      const { api, file } = await cityWith();
      writeFileSync(
        file,
        CITY_TOML + '\n[providers.lost]\nbase = "nowhere"\n\n[providers.lost-child]\nbase = "lost"\n',
      );
      const reply = await api.get<Readiness>('/provider-readiness?fresh=true');
      expect(reply.status).to.equal(200);
      const p = reply.body.providers;
      expect(p.lost.status).to.equal('invalid_configuration');
      expect(p.lost.detail).to.include('nowhere');
      expect(p['lost-child'].status).to.equal('invalid_configuration');
      expect(p.mine.status).to.equal('configured');

      writeFileSync(file, 'this is = = not toml');
      const broken = await api.get<Readiness>('/provider-readiness?providers=mine,codex&fresh=true');
      expect(broken.body.providers.mine.status).to.equal('invalid_configuration');
      expect(STATUSES).to.include(broken.body.providers.codex.status);
      expect(broken.body.providers.codex.status).to.not.equal('invalid_configuration');
    });
  });

  it('an agent may name a provider of the city: the city starts, and sessions of the agent run it', async function () {
    const { api } = await cityWith();
    const created = await api.post<{ request_id: string; session_id: string }>('/sessions', {
      kind: 'agent',
      name: 'ann',
      message: 'from ann',
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(202);
    await waitUntil('ann’s session to answer', async () => {
      const t = await api.get<{ provider: string; turns: { text: string }[] }>(
        `/session/${created.body.session_id}/transcript`,
      );
      return t.body.provider === 'mine' && t.body.turns?.some((turn) => turn.text.includes('echo: from ann'));
    });
    const events: Envelope[] = await api.events('request.failed');
    expect(events.filter((e) => e.payload.request_id === created.body.request_id)).to.deep.equal([]);
  });
});
