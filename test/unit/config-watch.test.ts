import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { watchConfig, type ConfigWatch } from '../../controller/config/config-watch.js';
import { waitUntil } from '../helpers/wait.js';

// The watch follows the sources the last reload composed. A source that is new to it (a pack just imported) is
// edited, on a busy machine, between the reload reading it and chokidar arming its watch: that edit must not be
// lost, so the sources are read once more when the new watch is armed.
describe('the configuration watch (chokidar, in-process)', function () {
  this.timeout(20_000);
  let root: string;
  let watch: ConfigWatch | undefined;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'ctl-watch-unit-'));
  });
  afterEach(async () => {
    await watch?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('reads again once a newly followed source is armed, so an edit made before that is not lost', async function () {
    const cityToml = join(root, 'city', 'city.toml');
    const late = join(root, 'late', 'pack.toml');
    mkdirSync(join(root, 'city'));
    mkdirSync(join(root, 'late'));
    writeFileSync(cityToml, 'one\n');
    writeFileSync(late, 'v1\n');
    let sources = [cityToml];
    const calls: string[][] = [];
    watch = await watchConfig(
      join(root, 'city'),
      () => sources,
      async (_file, all) => {
        calls.push(all);
        if (calls.length === 1) {
          // The reload takes the import …
          sources = [cityToml, late];
          // … and the pack is edited before the watch of it exists.
          writeFileSync(late, 'v2\n');
        }
      },
    );
    writeFileSync(cityToml, 'two\n');
    await waitUntil('the edit of city.toml to be heard', () => calls.length >= 1, 10_000);
    await waitUntil('the new source to be read once more', () => calls.length >= 2, 10_000);
    expect(calls[1]).to.deep.equal([join('..', 'late', 'pack.toml')]);
  });

  it('hears an edit of a newly followed source made after its watch is armed', async function () {
    const cityToml = join(root, 'city.toml');
    const pack = join(root, 'packs', 'soon', 'pack.toml');
    writeFileSync(cityToml, 'one\n');
    mkdirSync(join(root, 'packs', 'soon'), { recursive: true });
    writeFileSync(pack, 'v1\n');
    let sources = [cityToml];
    const calls: string[][] = [];
    watch = await watchConfig(
      root,
      () => sources,
      async (_file, all) => {
        calls.push(all);
        sources = [cityToml, pack];
      },
    );
    writeFileSync(cityToml, 'two\n');
    // The edit of city.toml, then the read once the pack's watch is armed.
    await waitUntil('the re-read after arming', () => calls.length >= 2, 10_000);
    writeFileSync(pack, 'v2\n');
    await waitUntil('the edit of the pack to be heard', () => calls.length >= 3, 10_000);
    expect(calls[2]).to.deep.equal([join('packs', 'soon', 'pack.toml')]);
  });
});
