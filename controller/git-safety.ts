/**
 * What every git command ctl itself runs is given, so that a repository — a rig anyone else may write to — cannot
 * make the controller's user run its code: its hooks (`worktree add` runs post-checkout, a merge post-merge,
 * every ref move reference-transaction), its `core.fsmonitor` (run by `status` and every checkout), a remote of
 * the `ext::` or `fd::` protocols (a command line as a URL), a signing program for the commits a rebase writes.
 * What the agent runs in its own shell is left alone: these are `-c` settings of ctl's commands, not the
 * repository's configuration or the session's environment.
 *
 * Not set, and why: `core.sshCommand`, credential helpers and proxies act only on network operations, which ctl
 * runs in repositories it made (a rig's clone, a pack's mirror) whose configuration it wrote, and in a push of a
 * session's branch (`merge = "push"`), where the person's own helpers and ssh keys are what must answer and only
 * the repository's own are dropped (`repositoryTransportOverrides`); a pager,
 * an editor, `diff.external` and textconv drivers run only for a terminal, `rebase -i`, or `diff`/`log -p`,
 * none of which ctl runs.
 */
export const SAFE_GIT_CONFIG: readonly string[] = [
  'core.hooksPath=/dev/null',
  'core.fsmonitor=false',
  'protocol.ext.allow=never',
  'protocol.fd.allow=never',
  'commit.gpgSign=false',
];

/** simple-git refuses the settings above unless told they are ours (it guards against a caller's injected ones). */
export const SAFE_GIT_CONFIG_ALLOWED = {
  allowUnsafeHooksPath: true,
  allowUnsafeFsMonitor: true,
  allowUnsafeProtocolOverride: true,
  allowUnsafeFilter: true,
  allowUnsafeMergeDriver: true,
} as const;

/** `-c key=value` for each setting. */
export function configArgs(settings: readonly string[]): string[] {
  return settings.flatMap((setting) => ['-c', setting]);
}

/**
 * The arguments of `git config` that list the content filters and merge drivers a repository's own
 * configuration defines (`.git/config`, its worktrees' and what they include): with attributes naming them, a
 * checkout runs their `smudge`, `status` their `clean`, a rebase or merge-tree their `driver`.
 */
export const REPOSITORY_DRIVERS_QUERY = [
  'config',
  '--show-scope',
  '--get-regexp',
  '^(filter\\..+\\.(clean|smudge|process)|merge\\..+\\.driver)$',
];

/**
 * From the answer to `REPOSITORY_DRIVERS_QUERY`, the settings that switch off every driver the repository itself
 * defines: an empty command is no filter, and an empty merge driver fails, so the file is a conflict rather than
 * the repository's program's output. Drivers of the user's or the system's configuration (git-lfs) are the
 * machine owner's and stay.
 */
export function repositoryDriverOverrides(listing: string): string[] {
  const filters = new Set<string>();
  const merges = new Set<string>();
  for (const line of listing.split('\n')) {
    const match = /^(local|worktree)\t(filter|merge)\.(.+)\.(clean|smudge|process|driver) /i.exec(line);
    if (!match) continue;
    (match[2]!.toLowerCase() === 'filter' ? filters : merges).add(match[3]!);
  }
  return [
    ...[...filters].flatMap((name) => [
      `filter.${name}.clean=`,
      `filter.${name}.smudge=`,
      `filter.${name}.process=`,
      `filter.${name}.required=false`,
    ]),
    ...[...merges].map((name) => `merge.${name}.driver=`),
  ];
}

/**
 * The arguments of `git config` that list what a push runs besides git: credential helpers (`credential.helper`,
 * `credential.<url>.helper`), `core.sshCommand`, `core.askPass`, a remote's `receivepack` (run here for a remote
 * that is a path), with the scope each comes from.
 */
export const TRANSPORT_PROGRAMS_QUERY = [
  'config',
  '--show-scope',
  '--get-regexp',
  '^(credential\\..*helper|core\\.sshcommand|core\\.askpass|remote\\..+\\.receivepack)$',
];

/**
 * From the answer to `TRANSPORT_PROGRAMS_QUERY`, the settings that keep a push to the person's own programs: what
 * the repository itself names (`local`, `worktree` scope) is dropped, what the user's or the system's
 * configuration names stays — credential helpers are a list, so it is emptied and the user's and the system's
 * given again in their order; a single setting falls back to the user's value, else git's default. A repository
 * that names none (the usual case) gets nothing.
 */
export function repositoryTransportOverrides(listing: string): string[] {
  const values = new Map<string, { scope: string; value: string }[]>();
  for (const line of listing.split('\n')) {
    const match = /^(\w+)\t(\S+) ?(.*)$/.exec(line);
    if (!match) continue;
    const key = match[2]!;
    values.set(key, [...(values.get(key) ?? []), { scope: match[1]!, value: match[3]! }]);
  }
  const theirs = (scope: string) => scope === 'local' || scope === 'worktree';
  const overrides: string[] = [];
  for (const [key, entries] of values) {
    if (!entries.some((e) => theirs(e.scope))) continue;
    const kept = entries.filter((e) => !theirs(e.scope) && e.scope !== 'command').map((e) => e.value);
    if (key.toLowerCase().startsWith('credential.')) overrides.push(`${key}=`, ...kept.map((v) => `${key}=${v}`));
    else overrides.push(`${key}=${kept.at(-1) ?? defaultOf(key)}`);
  }
  return overrides;
}

function defaultOf(key: string): string {
  if (key.toLowerCase() === 'core.sshcommand') return 'ssh';
  if (key.endsWith('.receivepack')) return 'git-receive-pack';
  return '';
}
