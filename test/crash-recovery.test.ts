// kill -9 of a controller in the middle of work that outlives a request — a workflow run whose steps are being
// closed, outbound messages being retried to an adapter that is down — and what the next controller makes of it:
// nothing lost, nothing done twice, exactly one terminal event each.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { expect } from 'chai';
import type { CityApi } from './helpers/city-api.js';
import { controllerPid } from './helpers/controller-pid.js';
import { isAlive, processesMentioning } from './helpers/processes.js';
import { createSession, startSessionCity, type SessionCity } from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

/** kill -9 of the city's controller, then its restart by the supervisor. */
async function crash(city: SessionCity, name: string): Promise<void> {
  const pid = controllerPid(city.dir);
  process.kill(pid, 'SIGKILL');
  await waitUntil('the controller to die', () => !isAlive(pid));
  await waitUntil(`${name} to run a new controller`, async () => {
    const info = await city.sup.city(name);
    return info?.running === true && info.pid !== pid;
  });
}

const WIDE = `
formula = "wide"
description = "Six steps at once"
${[1, 2, 3, 4, 5, 6].map((i) => `\n[[steps]]\nid = "s${i}"\ntitle = "Step ${i}"\n`).join('')}
`;

interface RunStep {
  id: string;
  status: string;
  kind: string;
}

async function runSteps(api: CityApi, runId: string): Promise<RunStep[]> {
  const reply = await api.get<{ steps: RunStep[] }>(`/runs/${runId}/steps`);
  expect(reply.status).to.equal(200);
  return reply.body.steps;
}

describe('kill -9 of a controller in the middle of work', function () {
  this.timeout(90_000);

  describe('a workflow run whose steps are being closed', function () {
    let city: SessionCity;
    before(async function () {
      city = await startSessionCity('runs');
    });
    after(async () => {
      await city?.sup.cleanup();
    });

    it('resolves once after the restart, with every step closed once and no bead made twice', async function () {
      const { api } = city;
      const put = await fetch(api.url('/formulas/wide'), {
        method: 'PUT',
        headers: { 'X-CTL-Request': '1', 'Content-Type': 'text/plain' },
        body: WIDE,
      });
      expect(put.status).to.be.oneOf([200, 201]);
      const cooked = await api.post<{ root_bead_id: string; created: number }>('/formulas/wide/cook', {});
      expect(cooked.status).to.equal(201);
      const runId = cooked.body.root_bead_id;
      const work = (await runSteps(api, runId)).filter((s) => s.kind === 'step');
      expect(work).to.have.length(6);
      const before = await runSteps(api, runId);

      // Every step closed at once, and the controller killed while those closes are on their way.
      const closing = work.map((s) => api.post(`/bead/${s.id}/close`).catch((err: unknown) => err));
      await waitUntil('a first step to close', async () =>
        (await runSteps(api, runId).catch(() => [])).some((s) => s.kind === 'step' && s.status === 'completed'),
      );
      await crash(city, 'runs');
      await Promise.all(closing);

      // What did not close before the crash is closed now; what did is not closed again.
      for (const step of await runSteps(api, runId)) {
        if (step.kind === 'step' && step.status !== 'completed') {
          expect((await api.post(`/bead/${step.id}/close`)).status).to.equal(200);
        }
      }
      await waitUntil('molecule.resolved', async () => {
        const resolved = (await api.events('molecule.resolved')).filter((e) => e.subject === runId);
        return resolved.length > 0;
      });
      const after = await runSteps(api, runId);
      expect(after.map((s) => s.id).sort()).to.deep.equal(before.map((s) => s.id).sort());
      expect(after.map((s) => s.status)).to.deep.equal(after.map(() => 'completed'));
      // Exactly one terminal event for the run, and no step recorded as closed twice.
      await waitUntil(
        'the run to settle',
        async () => (await api.get<{ status: string }>(`/runs/${runId}`)).body.status !== 'active',
      );
      expect((await api.events('molecule.resolved')).filter((e) => e.subject === runId)).to.have.length(1);
      const closedEvents = (await api.events('bead.closed')).filter((e) => after.some((s) => s.id === e.subject));
      expect(closedEvents.map((e) => e.subject).sort()).to.deep.equal(after.map((s) => s.id).sort());
    });
  });

  describe('a pack fetch', function () {
    let city: SessionCity;
    let hanging: NetServer;
    const sockets: Socket[] = [];
    let port = 0;

    before(async function () {
      // A git server that takes the connection and never answers: the fetch is under way when the controller dies.
      hanging = createNetServer((socket) => sockets.push(socket));
      await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
      const address = hanging.address();
      port = typeof address === 'object' && address ? address.port : 0;
      city = await startSessionCity('fetching');
    });
    after(async () => {
      await city?.sup.cleanup();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => hanging.close(resolve));
    });

    it('leaves nothing half-done and no git behind; the next fetch works', async function () {
      const { api } = city;
      const toml = readFileSync(join(city.dir, 'city.toml'), 'utf8');
      const source = `git://127.0.0.1:${port}/team/pack.git`;
      const pending = api.post('/packs', { source }).catch((err: unknown) => err);
      const git = await waitUntil('git to be fetching', () => {
        const pids = processesMentioning(`127.0.0.1:${port}`);
        return pids.length ? pids : undefined;
      });
      await crash(city, 'fetching');
      await pending;
      await waitUntil('the fetch of the dead controller to end', () => git.every((pid) => !isAlive(pid)));
      expect(readFileSync(join(city.dir, 'city.toml'), 'utf8')).to.equal(toml);
      expect(
        existsSync(join(city.dir, 'packs.lock')) ? readFileSync(join(city.dir, 'packs.lock'), 'utf8') : '',
      ).to.not.include(String(port));
      const packs = await api.get<{ packs: { name: string }[] }>('/packs');
      expect(packs.body.packs.map((p) => p.name)).to.deep.equal([]);
      // The same repository, now a real one, is fetched as if nothing had happened.
      const repo = join(city.sup.root, 'pack');
      mkdirSync(join(repo, 'formulas'), { recursive: true });
      writeFileSync(join(repo, 'pack.toml'), '[pack]\nname = "pack"\n');
      execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: repo });
      execFileSync('git', ['add', '.'], { cwd: repo });
      execFileSync('git', ['-c', 'user.email=t@example.invalid', '-c', 'user.name=t', 'commit', '-q', '-m', 'x'], {
        cwd: repo,
      });
      expect((await api.post('/packs', { source: `file://${repo}` })).status).to.equal(201);
    });
  });

  describe('outbound messages retried to an adapter that is down', function () {
    let city: SessionCity;
    let server: Server;
    let up = false;
    const posted: { message_id: string }[] = [];
    let url = '';

    before(async function () {
      server = createServer((req, res) => {
        let raw = '';
        req.on('data', (c: Buffer) => (raw += c.toString()));
        req.on('end', () => {
          if (!up) {
            res.writeHead(503).end('down');
            return;
          }
          posted.push(JSON.parse(raw) as { message_id: string });
          res.writeHead(200).end('{}');
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const address = server.address();
      url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/outbound`;
      city = await startSessionCity(
        'chat',
        '\n[[agent]]\nname = "helper"\nprovider = "echo"\nmin_active_sessions = 0\n',
      );
    });
    after(async () => {
      await city?.sup.cleanup();
      await new Promise((resolve) => server.close(resolve));
    });

    it('are delivered once after the restart, each with exactly one terminal event', async function () {
      const { api } = city;
      expect(
        (await api.post('/extmsg/adapters', { provider: 'chat', account_id: 'bot', callback_url: url })).status,
      ).to.be.oneOf([200, 201]);
      const session = await createSession(api, { name: 'echo', title: 'room bot' });
      const conversation = {
        scope_id: 'chat.example',
        provider: 'chat',
        account_id: 'bot',
        conversation_id: '#ops',
        kind: 'room',
      };
      const ids: string[] = [];
      for (const text of ['one', 'two', 'three']) {
        const sent = await api.post<{ Receipt: { MessageID: string; Delivered: boolean; FailureKind: string } }>(
          '/extmsg/outbound',
          { session_id: session, conversation, text },
        );
        expect(sent.body.Receipt).to.deep.include({ Delivered: false, FailureKind: 'retrying' });
        ids.push(sent.body.Receipt.MessageID);
      }
      // Retries are under way (more than the first attempt each) when the controller dies.
      await waitUntil('a retry of each', async () => {
        const events = (await api.events('extmsg.outbound')).filter((e) =>
          ids.includes((e.payload as { message_id: string }).message_id),
        );
        return ids.every(
          (id) => events.filter((e) => (e.payload as { message_id: string }).message_id === id).length >= 2,
        );
      });
      await crash(city, 'chat');
      up = true;
      await waitUntil(
        'every message delivered',
        () => ids.every((id) => posted.some((p) => p.message_id === id)),
        30_000,
      );
      // Delivered once each, and one terminal event each.
      for (const id of ids)
        expect(
          posted.filter((p) => p.message_id === id),
          id,
        ).to.have.length(1);
      const outcomes = (await api.events('extmsg.outbound')).filter((e) =>
        ids.includes((e.payload as { message_id: string }).message_id),
      );
      for (const id of ids) {
        const terminal = outcomes.filter((e) => {
          const p = e.payload as { message_id: string; status: string };
          return p.message_id === id && p.status !== 'retrying';
        });
        expect(
          terminal.map((e) => (e.payload as { status: string }).status),
          id,
        ).to.deep.equal(['delivered']);
      }
    });
  });
});
