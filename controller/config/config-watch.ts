import { basename, dirname, join, relative, sep } from 'node:path';
import type { FSWatcher } from 'chokidar';

/** Edits settle for this long before the configuration is read again (an editor writes a file in steps). */
const DEBOUNCE_MS = 200;

/** How deep under a watched directory files are heard: a pack's `commands/<four words>/run.sh` at most. */
const DEPTH = 6;

/** A running watch: `close` stops it. */
export interface ConfigWatch {
  close(): Promise<void>;
}

/**
 * Watches the files a city's configuration was composed from (`sources`: absolute paths of files and
 * directories — `city.toml`, `agents/`, a local pack's `pack.toml`, its fragments and formulas …, as
 * `ComposedConfig.sources` lists them) and calls `changed` once edits have settled, with the last file that
 * changed and every file that did (relative to the city's root). After each `changed` has run, the sources are
 * asked for again and the watch follows them: a pack imported since is heard, one dropped is not. Nothing else is
 * watched (rigs can be large repositories, `.ctl/` changes all the time, a git pack's cached commit never does).
 */
export async function watchConfig(
  root: string,
  sources: () => string[],
  changed: (file: string, all: string[]) => Promise<void>,
): Promise<ConfigWatch> {
  const { watch } = await import('chokidar');
  // Each directory watched, with the names in it that are sources (a source's parent is watched for it).
  let trees = treesOf(sources());
  const wanted = (path: string): boolean => {
    for (const [dir, names] of trees) {
      if (path === dir || dir.startsWith(path + sep)) return true;
      const rel = relative(dir, path);
      if (rel.startsWith('..') || rel === '') continue;
      if (names.has(rel.split(sep)[0]!)) return true;
    }
    return false;
  };
  const watcher: FSWatcher = watch([...trees.keys()], {
    ignoreInitial: true,
    depth: DEPTH,
    ignored: (path) => !wanted(path),
  });
  const follow = () => {
    const next = treesOf(sources());
    const gone = [...trees.keys()].filter((dir) => !next.has(dir));
    const added = [...next.keys()].filter((dir) => !trees.has(dir));
    // A new source in a directory already watched is added itself (the directory was walked without it).
    const widened = [...next].flatMap(([dir, names]) =>
      trees.has(dir) ? [...names].filter((n) => !trees.get(dir)!.has(n)).map((n) => join(dir, n)) : [],
    );
    trees = next;
    if (gone.length) watcher.unwatch(gone);
    if (added.length || widened.length) {
      watcher.add([...added, ...widened]);
      // An edit of a new source after the reload read it and before its watch is armed would go unheard: once
      // chokidar lists its directory, the sources are read once more (an unchanged read changes nothing).
      const fresh = [...added.flatMap((dir) => [...next.get(dir)!].map((name) => join(dir, name))), ...widened];
      void _armed(watcher, [...new Set(fresh.map(dirname))], () => closed).then(() => {
        if (!closed) heard(fresh[0]!);
      });
    }
  };
  let timer: NodeJS.Timeout | undefined;
  let last = '';
  let all = new Set<string>();
  let closed = false;
  const heard = (path: string) => {
    last = relative(root, path);
    all.add(last);
    clearTimeout(timer);
    timer = setTimeout(() => {
      const files = [...all];
      all = new Set();
      void changed(last, files).finally(() => {
        if (!closed) follow();
      });
    }, DEBOUNCE_MS);
  };
  watcher.on('all', (_event, path) => heard(path));
  watcher.on('error', () => undefined);
  await new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
  return {
    close: async () => {
      closed = true;
      clearTimeout(timer);
      await watcher.close();
    },
  };
}

/** How long a new source's watch may take to be listed before it is read again anyway. */
const ARM_BOUND_MS = 5_000;

/** Resolves once chokidar lists every one of `dirs` as watched (or after ARM_BOUND_MS, or once `stopped`). */
async function _armed(watcher: FSWatcher, dirs: string[], stopped: () => boolean): Promise<void> {
  const until = Date.now() + ARM_BOUND_MS;
  while (!stopped() && Date.now() < until) {
    const watched = watcher.getWatched();
    if (dirs.every((dir) => dir in watched)) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The sources by the directory they are in. */
function treesOf(sources: string[]): Map<string, Set<string>> {
  const trees = new Map<string, Set<string>>();
  for (const source of sources) {
    const dir = dirname(source);
    const names = trees.get(dir) ?? new Set<string>();
    names.add(basename(source));
    trees.set(dir, names);
  }
  return trees;
}
