import { relative, sep } from 'node:path';
import type { FSWatcher } from 'chokidar';

/** Edits settle for this long before the configuration is read again (an editor writes a file in steps). */
const DEBOUNCE_MS = 200;

/** What of a city is its configuration: these files and directories, relative to its root. */
const WATCHED = ['city.toml', 'pack.toml', 'packs.lock', 'agents', 'formulas', 'orders'];

/**
 * Watches a city's configuration files (`city.toml`, `agents/`, `formulas/`, `orders/`) and calls `changed`
 * once edits have settled, with the last file that changed and every file that did. Nothing else under the city is watched (rigs can be
 * large repositories, and `.ctl/` changes all the time).
 */
export async function watchConfig(
  root: string,
  changed: (file: string, all: string[]) => void,
): Promise<() => Promise<void>> {
  const { watch } = await import('chokidar');
  const wanted = (path: string): boolean => {
    const rel = relative(root, path);
    if (rel === '') return true;
    const [first = ''] = rel.split(sep);
    return WATCHED.includes(first);
  };
  const watcher: FSWatcher = watch(root, {
    ignoreInitial: true,
    depth: 4,
    ignored: (path) => !wanted(path),
  });
  let timer: NodeJS.Timeout | undefined;
  let last = '';
  let all = new Set<string>();
  const heard = (path: string) => {
    last = relative(root, path);
    all.add(last);
    clearTimeout(timer);
    timer = setTimeout(() => {
      const files = [...all];
      all = new Set();
      changed(last, files);
    }, DEBOUNCE_MS);
  };
  watcher.on('all', (_event, path) => heard(path));
  watcher.on('error', () => undefined);
  await new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
  return async () => {
    clearTimeout(timer);
    await watcher.close();
  };
}
