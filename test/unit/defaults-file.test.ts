import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Logger } from 'pino';
import type { DefaultsFile } from '../../controller/providers/provider-spec.js';
import { parseProviderSpec, resolveProviders } from '../../controller/providers/resolve.js';
import {
  DEFAULTS_FILE,
  defaultsFileRead,
  handDefaultsFile,
  overlaySettings,
  rootOnlyRefusal,
  type PathFacts,
} from '../../controller/sessions/defaults-file.js';

const gemini = (): DefaultsFile => resolveProviders({}, {}, 'city.toml').get('gemini')!.defaults_file!;

/** A file system as Gemini CLI's check sees it: everything root's and 0755 but what `odd` says. */
function facts(odd: Record<string, { uid?: number; mode?: number; link?: boolean }> = {}, links = {}): PathFacts {
  const of = (path: string) => ({ uid: 0, mode: 0o755, ...odd[path] });
  return {
    lstat: (path) => ({ ...of(path), isSymbolicLink: () => odd[path]?.link === true }),
    stat: of,
    realpath: (path) => (links as Record<string, string>)[path] ?? path,
  };
}

describe("a provider's defaults file (Gemini CLI's system defaults, its session clean-up off)", () => {
  let dir: string;
  let warnings: string[];
  const logger = {
    warn: (_: unknown, message: string) => warnings.push(message),
    debug: () => undefined,
  } as unknown as Logger;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ctl-defaults-'));
    warnings = [];
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('is preset data of Gemini CLI, inherited by a provider based on it, and not of Qwen Code', () => {
    expect(gemini()).to.deep.include({
      env: 'GEMINI_CLI_SYSTEM_DEFAULTS_PATH',
      settings: { general: { sessionRetention: { enabled: false } } },
      root_only: true,
    });
    const spec = parseProviderSpec({ base: 'builtin:gemini', args_append: ['-m', 'x'] }, 'providers.mine');
    const providers = resolveProviders({ mine: spec }, {}, 'city.toml');
    expect(providers.get('mine')!.defaults_file).to.deep.equal(gemini());
    expect(providers.get('qwen')!.defaults_file).to.equal(undefined);
  });

  it('sets its own keys over the settings it is given, object by object, changing neither', () => {
    const theirs = { general: { vimMode: true, sessionRetention: { maxAge: '7d' } }, tools: { exclude: ['a'] } };
    const ours = { general: { sessionRetention: { enabled: false } }, tools: { exclude: ['b'] } };
    expect(overlaySettings(theirs, ours)).to.deep.equal({
      general: { vimMode: true, sessionRetention: { maxAge: '7d', enabled: false } },
      tools: { exclude: ['b'] },
    });
    expect(theirs.general.sessionRetention).to.deep.equal({ maxAge: '7d' });
  });

  it('finds the file the program reads without ours as Gemini CLI does', () => {
    const spec = gemini();
    expect(defaultsFileRead(spec, { GEMINI_CLI_SYSTEM_DEFAULTS_PATH: '/opt/g/d.json' })).to.equal('/opt/g/d.json');
    expect(defaultsFileRead(spec, { GEMINI_CLI_SYSTEM_SETTINGS_PATH: '/opt/g/s.json' })).to.equal(
      '/opt/g/system-defaults.json',
    );
    expect(defaultsFileRead(spec, {})).to.equal('/etc/gemini-cli/system-defaults.json');
  });

  it('is refused, as Gemini CLI refuses it, unless root alone can change it and every directory above it', () => {
    expect(rootOnlyRefusal('/srv/city/.ctl/f.json', facts())).to.equal(undefined);
    expect(rootOnlyRefusal('/srv/city/.ctl/f.json', facts({ '/srv/city': { uid: 1000 } }))).to.equal(
      '/srv/city is not owned by root',
    );
    expect(rootOnlyRefusal('/srv/city/.ctl/f.json', facts({ '/srv': { mode: 0o775 } }))).to.equal(
      '/srv is writable by group or others',
    );
    expect(rootOnlyRefusal('/srv/f.json', facts({ '/srv/f.json': { link: true, uid: 1000 } }))).to.equal(
      '/srv/f.json is a link not owned by root',
    );
    // Where a link leads counts too.
    const linked = facts({ '/home/me': { uid: 1000 } }, { '/srv/f.json': '/home/me/f.json' });
    expect(rootOnlyRefusal('/srv/f.json', linked)).to.equal('/home/me is not owned by root');
    // The temporary directory is everyone's to write (1777).
    const file = join(dir, 'f.json');
    writeFileSync(file, '{}');
    expect(rootOnlyRefusal(file)).to.be.a('string');
  });

  it("hands the session's own file: the person's defaults with the clean-up off on top, theirs untouched", () => {
    const theirs = join(dir, 'theirs.json');
    const text = JSON.stringify({ general: { vimMode: true, sessionRetention: { maxAge: '7d' } }, ui: { a: 1 } });
    writeFileSync(theirs, text);
    const env: NodeJS.ProcessEnv = { GEMINI_CLI_SYSTEM_DEFAULTS_PATH: theirs };
    handDefaultsFile(gemini(), env, dir, logger, facts());
    const ours = join(dir, DEFAULTS_FILE);
    expect(env.GEMINI_CLI_SYSTEM_DEFAULTS_PATH).to.equal(ours);
    expect(JSON.parse(readFileSync(ours, 'utf8'))).to.deep.equal({
      general: { vimMode: true, sessionRetention: { maxAge: '7d', enabled: false } },
      ui: { a: 1 },
    });
    expect(readFileSync(theirs, 'utf8')).to.equal(text);
    expect(warnings).to.deep.equal([]);
    // Without one of theirs, ours holds the clean-up alone.
    const bare: NodeJS.ProcessEnv = { GEMINI_CLI_SYSTEM_SETTINGS_PATH: join(dir, 'none', 'settings.json') };
    handDefaultsFile(gemini(), bare, dir, logger, facts());
    expect(JSON.parse(readFileSync(ours, 'utf8'))).to.deep.equal(gemini().settings);
  });

  it('reads no file of theirs the program itself would refuse', () => {
    const theirs = join(dir, 'theirs.json');
    writeFileSync(theirs, JSON.stringify({ tools: { sandbox: 'x' } }));
    const env: NodeJS.ProcessEnv = { GEMINI_CLI_SYSTEM_DEFAULTS_PATH: theirs };
    handDefaultsFile(gemini(), env, dir, logger, facts({ [theirs]: { mode: 0o666 } }));
    expect(JSON.parse(readFileSync(join(dir, DEFAULTS_FILE), 'utf8'))).to.deep.equal(gemini().settings);
  });

  it('changes nothing where the program would not read it, or where theirs is not plain JSON, saying why', () => {
    const theirs = join(dir, 'theirs.json');
    writeFileSync(theirs, '{"general": {}}');
    const env: NodeJS.ProcessEnv = { GEMINI_CLI_SYSTEM_DEFAULTS_PATH: theirs };
    // The real file system: a file under the temporary directory is one Gemini CLI refuses.
    handDefaultsFile(gemini(), env, dir, logger);
    expect(env.GEMINI_CLI_SYSTEM_DEFAULTS_PATH).to.equal(theirs);
    expect(existsSync(join(dir, DEFAULTS_FILE))).to.equal(false);
    expect(warnings).to.have.length(1);
    expect(warnings[0]).to.match(/would not read a defaults file here .*put \{"general":\{"sessionRetention"/);
    // Said once: the next session's start is as refused, and quiet.
    handDefaultsFile(gemini(), env, dir, logger);
    expect(warnings).to.have.length(1);

    writeFileSync(theirs, '{ // a comment\n "general": {} }');
    handDefaultsFile(gemini(), env, dir, logger, facts());
    expect(env.GEMINI_CLI_SYSTEM_DEFAULTS_PATH).to.equal(theirs);
    expect(existsSync(join(dir, DEFAULTS_FILE))).to.equal(false);
    expect(warnings[1]).to.match(/not plain JSON/);
  });
});
