import { chmodSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { CSRF, TestSupervisor, tempDir } from './helpers/supervisor.js';
import { makeUnchangeable } from './helpers/unchangeable.js';

interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  errors?: { location: string; message: string }[];
}

async function post(sup: TestSupervisor, path: string, body?: unknown): Promise<{ status: number; problem: Problem }> {
  const res = await fetch(`${sup.base}${path}`, {
    method: 'POST',
    headers: { 'X-CTL-Request': 'test', ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
  expect(res.headers.get('x-ctl-request-id')).to.match(/^[0-9a-f]{16}$/);
  const problem = (await res.json()) as Problem;
  expect(problem.status).to.equal(res.status);
  expect(problem.type).to.equal(`urn:ctl:error:${problem.code}`);
  return { status: res.status, problem };
}

describe("the spec's error table", function () {
  let sup: TestSupervisor;
  let bin: string;

  before(async function () {
    // A PATH with a signed-in `claude` and without any other provider tool.
    bin = tempDir('ctl-bin-');
    writeFileSync(join(bin, 'claude'), '#!/bin/sh\necho \'{"loggedIn": true}\'\n');
    chmodSync(join(bin, 'claude'), 0o755);
    // `npm test` puts node_modules/.bin on PATH, where the real codex (a dev dependency, for its own tests) is.
    const others = (process.env.PATH ?? '').split(':').filter((dir) => !existsSync(join(dir, 'codex')));
    sup = await TestSupervisor.start({ env: { PATH: [bin, ...others].join(':') } });
    await sup.createCity('alpha');
  });

  after(async function () {
    await sup?.cleanup();
    rmSync(bin, { recursive: true, force: true });
  });

  it('POST /v0/city 409 when the directory already holds a city', async function () {
    const { status, problem } = await post(sup, '/v0/city', { dir: sup.cityDir('alpha'), start_command: 'true' });
    expect(status).to.equal(409);
    expect(problem.detail).to.equal(`conflict: city already initialized at ${sup.cityDir('alpha')}`);
  });

  it('POST /v0/city 409 while a create for the same directory is in progress', async function () {
    const slow = await TestSupervisor.start({ env: { CTL_CONTROLLER_PHASE_DELAY_MS: '500' } });
    try {
      const dir = slow.cityDir('busy');
      const first = await slow.api.POST('/v0/city', { params: { header: CSRF }, body: { dir, start_command: 'true' } });
      expect(first.response.status).to.equal(202);
      const again = await post(slow, '/v0/city', { dir, start_command: 'true' });
      expect(again.status).to.equal(409);
      expect(again.problem.code).to.equal('operation-in-progress');
      expect(again.problem.detail).to.match(/^conflict: /);
      // Starting, stopping or unregistering it before its create has finished would race the outcome.
      for (const action of ['stop', 'start', 'unregister']) {
        const busy = await post(slow, `/v0/city/busy/${action}`);
        expect(busy.status, action).to.equal(409);
        expect(busy.problem.code).to.equal('operation-in-progress');
      }
    } finally {
      await slow.cleanup();
    }
  });

  it('POST /v0/city 422 for an unknown provider, a bad profile, and neither or both of provider/start_command', async function () {
    const unknown = await post(sup, '/v0/city', { dir: sup.cityDir('x1'), provider: 'nope' });
    expect(unknown.status).to.equal(422);
    expect(unknown.problem.errors!.map((e) => e.location)).to.include('body.provider');
    const profile = await post(sup, '/v0/city', {
      dir: sup.cityDir('x2'),
      start_command: 'true',
      bootstrap_profile: 'mars',
    });
    expect(profile.status).to.equal(422);
    expect(profile.problem.errors!.map((e) => e.location)).to.include('body.bootstrap_profile');
    const neither = await post(sup, '/v0/city', { dir: sup.cityDir('x3') });
    expect(neither.status).to.equal(422);
    const both = await post(sup, '/v0/city', { dir: sup.cityDir('x4'), provider: 'claude', start_command: 'true' });
    expect(both.status).to.equal(422);
    expect(both.problem.errors!.map((e) => e.location)).to.include.members(['body.provider', 'body.start_command']);
  });

  it('POST /v0/city 503 when the provider tool is not installed; a signed-in provider works', async function () {
    const missing = await post(sup, '/v0/city', { dir: sup.cityDir('x5'), provider: 'codex' });
    expect(missing.status).to.equal(503);
    expect(missing.problem.detail).to.match(/^provider_not_ready: provider codex is not_installed/);
    const { response, data } = await sup.api.POST('/v0/city', {
      params: { header: CSRF },
      body: { dir: sup.cityDir('claude-city'), provider: 'claude' },
    });
    expect(response.status).to.equal(202);
    expect((await sup.terminalEvent(data!.request_id)).type).to.equal('request.result.city.create');
  });

  it('POST /v0/city 500 when the scaffold fails half way, leaving the directory as it was', async function () {
    // city.toml can be written, but `.ctl` is taken by a file, so the event log cannot be created.
    const dir = sup.cityDir('halfway');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, '.ctl'), 'in the way');
    const { status, problem } = await post(sup, '/v0/city', { dir, start_command: 'true' });
    expect(status).to.equal(500);
    expect(problem.detail).to.match(/^internal: could not scaffold city at /);
    expect(readdirSync(dir)).to.deep.equal(['.ctl']);
    const { data } = await sup.api.GET('/v0/cities');
    expect(data!.items.map((c) => c.name)).to.not.include('halfway');
  });

  it('POST /v0/city 500 when the registry cannot be written, undoing the scaffold', async function () {
    const restore = makeUnchangeable(join(sup.home, 'cities.toml'));
    try {
      const { status, problem } = await post(sup, '/v0/city', { dir: sup.cityDir('unwritten'), start_command: 'true' });
      expect(status).to.equal(500);
      expect(problem.detail).to.match(/^internal: could not write the registry/);
    } finally {
      restore();
    }
    expect(readdirSync(sup.citiesDir)).to.not.include('unwritten');
    const retry = await sup.api.POST('/v0/city', {
      params: { header: CSRF },
      body: { dir: sup.cityDir('unwritten'), start_command: 'true' },
    });
    expect(retry.response.status).to.equal(202);
  });

  it('POST /v0/city/{cityName}/unregister 404 for a city not in the registry', async function () {
    const { status, problem } = await post(sup, '/v0/city/nowhere/unregister');
    expect(status).to.equal(404);
    expect(problem.detail).to.equal('not_found: city not registered with supervisor: nowhere');
  });

  it('POST /v0/city/{cityName}/unregister 500 when the registry cannot be written', async function () {
    const restore = makeUnchangeable(join(sup.home, 'cities.toml'));
    try {
      const { status, problem } = await post(sup, '/v0/city/alpha/unregister');
      expect(status).to.equal(500);
      expect(problem.detail).to.match(/^internal: could not write the registry/);
    } finally {
      restore();
    }
    expect((await sup.city('alpha'))?.running).to.equal(true);
  });

  it('typed per-city routes 404 with the city name, svc/* with the static detail', async function () {
    const typed = await fetch(`${sup.base}/v0/city/ghost/status`);
    expect(typed.status).to.equal(404);
    expect(((await typed.json()) as { detail: string }).detail).to.equal(
      'not_found: city not found or not running: ghost',
    );
    const svc = await fetch(`${sup.base}/v0/city/ghost/svc/web/index.html`);
    expect(svc.status).to.equal(404);
    expect(((await svc.json()) as { detail: string }).detail).to.equal('not_found: city not found or not running');
  });
});
