import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, chmodSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { parseCityConfig, type CityConfig } from '../../shared/config/city-config.js';
import { Problem } from '../../shared/http/problem.js';
import {
  brokenServices,
  editConfigFile,
  proposeEdit,
  type ConfigFileHost,
  type WrittenConfig,
} from '../../controller/config/config-file-edit.js';
import { appendTable, removeTable } from '../../controller/config/toml-table-edit.js';

// The one funnel every write of a city's configuration goes through: the dry run composes the city the edit
// would leave (with an edited agent.toml or pack.toml read in place of the file on disk) and refuses what a
// reload would refuse; only then is the file replaced and the new configuration handed to the controller.

const PROVIDER = '[providers.echo]\ncommand = "/bin/cat"\n';

/** A city directory with `city.toml` (and any other files), and a host over it that records what it took. */
function city(cityToml: string, files: Record<string, string> = {}) {
  const root = mkdtempSync(join(tmpdir(), 'ctl-funnel-unit-'));
  writeFileSync(join(root, 'city.toml'), cityToml);
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(join(root, file, '..'), { recursive: true });
    writeFileSync(join(root, file), text);
  }
  const taken: { config: CityConfig; written: WrittenConfig }[] = [];
  const host: ConfigFileHost = {
    root,
    paths: { config: join(root, 'city.toml') },
    config: parseCityConfig(cityToml, 'city.toml', { serviceProblems: [] }),
    reloadConfig: (config, written) => void taken.push({ config, written }),
  };
  const read = (file = 'city.toml') => readFileSync(join(root, file), 'utf8');
  return { root, host, taken, read, cacheRoot: join(root, 'cache') };
}

/** The Problem `fn` throws (failing the test when it throws none, or something else). */
function problemOf(fn: () => unknown): Problem {
  try {
    fn();
  } catch (err) {
    if (err instanceof Problem) return err;
    throw err;
  }
  expect.fail('expected a Problem');
}

describe('config edit funnel: the dry run', function () {
  const made: string[] = [];
  afterEach(() => {
    for (const root of made.splice(0)) rmSync(root, { recursive: true, force: true });
  });
  const cityOf = (...args: Parameters<typeof city>) => {
    const c = city(...args);
    made.push(c.root);
    return c;
  };

  it('composes a city.toml edit: a rig removed turns its agent into a second `worker`, a 422 naming it', function () {
    const text = `${PROVIDER}
[[rigs]]
name = "web"
path = "web"

[[agent]]
name = "worker"
dir = "web"
provider = "echo"

[[agent]]
name = "worker"
provider = "echo"
`;
    const c = cityOf(text);
    const kept = proposeEdit(c.host, { file: 'city.toml', text }, text, [], c.cacheRoot);
    expect(kept.composed.agents.map((a) => [a.name, a.dir])).to.deep.equal([
      ['worker', 'web'],
      ['worker', undefined],
    ]);
    const problem = problemOf(() =>
      proposeEdit(c.host, { file: 'city.toml', text: removeTable(text, 'rigs', 0) }, text, [], c.cacheRoot),
    );
    expect(problem.status).to.equal(422);
    expect(problem.code).to.equal('validation-failed');
    expect(problem.detail).to.equal('invalid: city.toml: agent worker is defined twice (twice in city.toml)');
  });

  it('reads an edited agent.toml in place of the file on disk, and refuses one a reload would refuse', function () {
    const onDisk = 'provider = "echo"\nmax_active_sessions = 2\n';
    const text = `${PROVIDER}`;
    const c = cityOf(text, { 'agents/scribe/agent.toml': onDisk, 'agents/other/agent.toml': 'provider = "echo"\n' });
    const edited = `${onDisk}description = "keeps the minutes"\n`;
    const { composed } = proposeEdit(c.host, { file: 'agents/scribe/agent.toml', text: edited }, text, [], c.cacheRoot);
    expect(composed.agents.find((a) => a.name === 'scribe')?.description).to.equal('keeps the minutes');
    expect(composed.agents.map((a) => a.name)).to.deep.equal(['other', 'scribe']);
    expect(c.read('agents/scribe/agent.toml')).to.equal(onDisk);
    const problem = problemOf(() =>
      proposeEdit(
        c.host,
        { file: 'agents/scribe/agent.toml', text: `${onDisk}min_active_sessions = 3\n` },
        text,
        [],
        c.cacheRoot,
      ),
    );
    expect(problem.status).to.equal(422);
    expect(problem.detail).to.equal(
      'invalid: agents/scribe/agent.toml: min_active_sessions (3) is more than max_active_sessions (2)',
    );
  });

  it('reads an edited pack.toml in place of the file on disk', function () {
    const text = PROVIDER;
    const c = cityOf(text, { 'pack.toml': '[pack]\nname = "own"\n' });
    const edited = '[pack]\nname = "own"\n\n[[agent]]\nname = "root-agent"\nprovider = "echo"\n';
    const { composed } = proposeEdit(c.host, { file: 'pack.toml', text: edited }, text, [], c.cacheRoot);
    expect(composed.agents.map((a) => [a.name, a.source])).to.deep.equal([['root-agent', 'pack.toml']]);
  });

  it('refuses a provider edit that a [[patches.provider]] over it would leave unusable', function () {
    const text = `[providers.flagged]\ncommand = "/bin/true"\nprompt_flag = "--p"\n\n[[patches.provider]]\nname = "flagged"\nprompt_mode = "flag"\n`;
    const c = cityOf(text);
    expect(
      proposeEdit(c.host, { file: 'city.toml', text }, text, [], c.cacheRoot).composed.config.providers.flagged,
    ).to.have.property('prompt_mode', 'flag');
    const edited = text.replace('prompt_flag = "--p"\n', '');
    const problem = problemOf(() => proposeEdit(c.host, { file: 'city.toml', text: edited }, text, [], c.cacheRoot));
    expect(problem.status).to.equal(422);
    expect(problem.detail).to.match(/^invalid: .*flagged.*prompt_flag/);
  });

  it('keeps the [[service]] tables in use beside a broken one the edit leaves, and refuses a new broken one', function () {
    const good = '[[service]]\nname = "web"\nurl = "http://127.0.0.1:9"\n';
    const text = `${PROVIDER}\n${good}\n[[service]]\nname = "bad name!"\nurl = "http://127.0.0.1:9"\n`;
    const c = cityOf(text);
    const existing = brokenServices(text);
    expect(existing).to.have.length(1);
    expect(existing[0]).to.match(/service\[1\]\.name/);
    const inUse = c.host.config.services;
    const edited = appendTable(text, 'agent', { name: 'helper', provider: 'echo' });
    const { config, composed } = proposeEdit(c.host, { file: 'city.toml', text: edited }, text, existing, c.cacheRoot);
    expect(config.services).to.equal(inUse);
    expect(composed.agents.map((a) => a.name)).to.deep.equal(['helper']);
    const worse = appendTable(edited, 'service', { name: 'also bad!', url: 'http://127.0.0.1:9' });
    const problem = problemOf(() =>
      proposeEdit(c.host, { file: 'city.toml', text: worse }, text, existing, c.cacheRoot),
    );
    expect(problem.status).to.equal(422);
    expect(problem.detail).to.match(/service\[2\]\.name/);
  });

  it('refuses an edit that would take a file over 1 MiB with a 413, before parsing it', function () {
    const c = cityOf(PROVIDER);
    const huge = `${PROVIDER}# ${'x'.repeat(1024 * 1024)}\n`;
    const problem = problemOf(() => proposeEdit(c.host, { file: 'city.toml', text: huge }, PROVIDER, [], c.cacheRoot));
    expect(problem.status).to.equal(413);
    expect(problem.detail).to.match(/^too_large: city\.toml: .* over the 1 MiB limit .*; city\.toml was not changed$/);
  });
});

describe('config edit funnel: editConfigFile', function () {
  const made: string[] = [];
  afterEach(() => {
    for (const root of made.splice(0)) rmSync(root, { recursive: true, force: true });
  });
  const cityOf = (...args: Parameters<typeof city>) => {
    const c = city(...args);
    made.push(c.root);
    return c;
  };
  const twoWorkers = `${PROVIDER}\n[[rigs]]\nname = "web"\npath = "web"\n\n[[agent]]\nname = "worker"\ndir = "web"\nprovider = "echo"\n\n[[agent]]\nname = "worker"\nprovider = "echo"\n`;

  it('a refused edit leaves the file byte for byte and takes nothing', function () {
    const c = cityOf(twoWorkers);
    const problem = problemOf(() => editConfigFile(c.host, 'city.toml', (t) => removeTable(t, 'rigs', 0)));
    expect(problem.status).to.equal(422);
    expect(c.read()).to.equal(twoWorkers);
    expect(c.taken).to.deep.equal([]);
  });

  it('a verify that refuses leaves the file as it was; an accepted edit is written, its mode kept, and taken once', function () {
    const c = cityOf(twoWorkers);
    chmodSync(c.host.paths.config, 0o640);
    const refusal = new Problem('validation-failed', 'invalid: not this one');
    expect(
      problemOf(() =>
        editConfigFile(
          c.host,
          'city.toml',
          (t) => appendTable(t, 'agent', { name: 'helper', provider: 'echo' }),
          () => {
            throw refusal;
          },
        ),
      ),
    ).to.equal(refusal);
    expect(c.read()).to.equal(twoWorkers);
    editConfigFile(c.host, 'city.toml', (t) => appendTable(t, 'agent', { name: 'helper', provider: 'echo' }));
    expect(c.read()).to.equal(`${twoWorkers}\n[[agent]]\nname = "helper"\nprovider = "echo"\n`);
    expect(statSync(c.host.paths.config).mode & 0o777).to.equal(0o640);
    expect(c.taken).to.have.length(1);
    const [{ config, written }] = c.taken;
    expect(written.file).to.equal('city.toml');
    expect(written.text).to.equal(c.read());
    expect(config.agents.map((a) => a.name)).to.deep.equal(['worker', 'worker', 'helper']);
    expect(written.composed.agents.map((a) => a.name)).to.include('helper');
  });

  it("writes an agent's agent.toml (started when the directory has only a prompt) and takes it", function () {
    const c = cityOf(PROVIDER, { 'agents/scribe/prompt.md': 'You write.\n' });
    editConfigFile(c.host, 'agents/scribe/agent.toml', (t) => `${t}provider = "echo"\n`);
    expect(c.read('agents/scribe/agent.toml')).to.equal('provider = "echo"\n');
    expect(c.taken.map((t) => [t.written.file, t.written.composed.agents.map((a) => a.provider)])).to.deep.equal([
      ['agents/scribe/agent.toml', ['echo']],
    ]);
  });

  it('a file broken by hand is a 409 naming it, and is not overwritten', function () {
    const c = cityOf(PROVIDER, { 'agents/scribe/agent.toml': 'provider = \n' });
    const problem = problemOf(() => editConfigFile(c.host, 'agents/scribe/agent.toml', (t) => `${t}# more\n`));
    expect(problem.status).to.equal(409);
    expect(problem.detail).to.match(
      /^conflict: agents\/scribe\/agent\.toml is not valid as it is on disk; fix it by hand first: agents\/scribe\/agent\.toml:1:/,
    );
    expect(c.read('agents/scribe/agent.toml')).to.equal('provider = \n');
    writeFileSync(c.host.paths.config, '[[agent]\n');
    const broken = problemOf(() => editConfigFile(c.host, 'city.toml', (t) => t));
    expect(broken.status).to.equal(409);
    expect(broken.detail).to.match(/^conflict: city\.toml is not valid as it is on disk/);
    expect(c.taken).to.deep.equal([]);
  });
});
