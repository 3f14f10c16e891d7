import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { packageRoot } from '../shared/paths.js';
import { CityApi, expectProblem, registerCity } from './helpers/city-api.js';
import { TestSupervisor } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

/** A text agent that runs `$ <command>` lines in a new bash each (test/fixtures/shell-agent.sh). */
const SHELL_AGENT = join(packageRoot, 'test', 'fixtures', 'shell-agent.sh');

/** 26 defines, each calling the one below twice: `l26` would be 2^26 times `ha` (128 Mi characters). */
function doublingBomb(levels = 26): string {
  let text = '{{ define "l0" }}ha{{ end }}\n';
  for (let i = 1; i <= levels; i++) {
    text += `{{ define "l${i}" }}{{ template "l${i - 1}" . }}{{ template "l${i - 1}" . }}{{ end }}\n`;
  }
  return `${text}{{ template "l${levels}" . }}\n`;
}

/**
 * A prompt template that would expand without bound (a doubling bomb of nested defines) in a real city: validate
 * names its file, its template and the limit; creating a session of its agent and priming a session whose agent's
 * prompt became one answer 422 (problem+json), and the controller keeps answering meanwhile. A prompt that stays
 * in bounds renders every field, `.CityName` with the city's name.
 */
describe('a prompt template that expands without bound is refused, at validate and at render', function () {
  this.timeout(60_000);
  let sup: TestSupervisor;
  let api: CityApi;
  let dir: string;

  before(async function () {
    sup = await TestSupervisor.start();
    dir = sup.cityDir('bombs');
    for (const agent of ['worker', 'bomber']) mkdirSync(join(dir, 'agents', agent), { recursive: true });
    writeFileSync(
      join(dir, 'city.toml'),
      `[workspace]\nname = "bombs"\n\n[providers.shell]\ncommand = "${SHELL_AGENT}"\nready_prompt_prefix = "ready>"\n`,
    );
    for (const agent of ['worker', 'bomber']) {
      writeFileSync(join(dir, 'agents', agent, 'agent.toml'), 'provider = "shell"\nmin_active_sessions = 0\n');
    }
    writeFileSync(join(dir, 'agents', 'worker', 'prompt.template.md'), 'Worker of {{ .CityName }}: {{ .WorkQuery }}\n');
    writeFileSync(join(dir, 'agents', 'bomber', 'prompt.template.md'), doublingBomb());
    api = await registerCity(sup, 'bombs');
  });

  after(async function () {
    await sup?.cleanup();
  });

  it('ctl config validate names the file, the template and the limit', async function () {
    const result = await sup.ctl(['config', 'validate', '--city', 'bombs']);
    expect(result.code, result.stdout + result.stderr).to.equal(1);
    expect(result.stdout).to.include(
      `agents/bomber/prompt.template.md: agent bomber's prompt template: template "l26" takes more than 100000 steps to render (the limit)`,
    );
    expect(result.stdout).not.to.match(/agent worker/);
  });

  it('POST /sessions of its agent answers 422 problem+json, and no session is made', async function () {
    const created = await api.post('/sessions', { kind: 'agent', name: 'bomber' });
    const problem = expectProblem(created, 422, 'validation-failed');
    expect(problem.detail).to.include('template "l26" takes more than 100000 steps');
    const list = await api.get<{ items: unknown[] }>('/sessions?template=bomber');
    expect(list.body.items).to.deep.equal([]);
  });

  it('a session renders .CityName; when its agent’s prompt becomes a bomb, prime answers 422 while /health answers', async function () {
    const created = await api.post<{ session_id: string }>('/sessions', { kind: 'agent', name: 'worker' });
    expect(created.status, JSON.stringify(created.body)).to.equal(202);
    const id = created.body.session_id;
    const primed = await api.get<{ prompt?: string }>(`/session/${id}/prime`);
    expect(primed.status, JSON.stringify(primed.body)).to.equal(200);
    expect(primed.body.prompt).to.equal('Worker of bombs: ctl hook\n');

    writeFileSync(join(dir, 'agents', 'worker', 'prompt.template.md'), doublingBomb());
    const refused = await waitUntil('the bomb to be taken', async () => {
      const reply = await api.get(`/session/${id}/prime`);
      return reply.status === 200 ? undefined : reply;
    });
    expectProblem(refused, 422, 'validation-failed');
    // Asked at once: the refusal and the health check both answer.
    const [prime, health] = await Promise.all([
      api.get(`/session/${id}/prime`),
      api.get<{ status: string }>('/health'),
    ]);
    expect((prime.body as { detail: string }).detail).to.include('template "l26"');
    expect(prime.status).to.equal(422);
    expect(health.status).to.equal(200);
  });
});
