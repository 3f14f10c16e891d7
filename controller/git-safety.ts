/**
 * What every git command ctl itself runs is given, so that a repository — a rig anyone else may write to — cannot
 * make the controller's user run its code: its hooks (`worktree add` runs post-checkout, a merge post-merge,
 * every ref move reference-transaction), its `core.fsmonitor` (run by `status` and every checkout), a remote of
 * the `ext::` or `fd::` protocols (a command line as a URL), a signing program for the commits a rebase writes.
 * What the agent runs in its own shell is left alone: these are `-c` settings of ctl's commands, not the
 * repository's configuration or the session's environment.
 *
 * Not set, and why: `core.sshCommand`, credential helpers and proxies act only on network operations, and ctl
 * runs those only in repositories it made (a rig's clone, a pack's mirror) whose configuration it wrote; a pager,
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
