import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { parseCityConfig } from '../../shared/config/city-config.js';
import { Problem } from '../../shared/http/problem.js';
import { ProviderEditor } from '../../controller/config/provider-editor.js';

// A provider's name is the person's: one that every object also inherits (`constructor`, `toString`) is looked up
// among the city's own tables and the built-in presets only, never found on the prototype.

const CITY = `[providers.constructor]
command = "/bin/cat"

[[agent]]
name = "worker"
provider = "constructor"
`;

describe('provider edits and inherited property names', function () {
  const made: string[] = [];
  afterEach(() => {
    for (const root of made.splice(0)) rmSync(root, { recursive: true, force: true });
  });

  function editor(text: string) {
    const root = mkdtempSync(join(tmpdir(), 'ctl-provider-names-unit-'));
    made.push(root);
    writeFileSync(join(root, 'city.toml'), text);
    const editor = new ProviderEditor({
      root,
      paths: { config: join(root, 'city.toml') },
      config: parseCityConfig(text, 'city.toml'),
      reloadConfig: () => undefined,
    });
    return { editor, read: () => readFileSync(join(root, 'city.toml'), 'utf8') };
  }

  async function problemOf(work: Promise<unknown>): Promise<Problem> {
    const err = await work.then(
      () => undefined,
      (e: unknown) => e,
    );
    if (err instanceof Problem) return err;
    expect.fail(`expected a Problem, got ${String(err)}`);
  }

  it('refuses to delete a provider named constructor while an agent uses it (409)', async () => {
    const c = editor(CITY);
    const problem = await problemOf(c.editor.remove('constructor'));
    expect(problem.message).to.contain('in use by agent worker');
    expect(c.read()).to.equal(CITY);
  });

  it('answers 404 for a change to a provider named toString that is not there, and writes nothing', async () => {
    const c = editor(CITY);
    const problem = await problemOf(c.editor.update('toString', { command: 'echo' }));
    expect(problem.message).to.contain('toString');
    expect(problem.message).to.not.contain('conflict');
    expect(c.read()).to.equal(CITY);
  });

  it('creates a provider named valueOf', async () => {
    const c = editor('');
    const reply = await c.editor.create({ name: 'valueOf', command: '/bin/cat' });
    expect(reply).to.deep.equal({ status: 'created', provider: 'valueOf' });
    expect(c.read()).to.contain('[providers.valueOf]');
  });
});
