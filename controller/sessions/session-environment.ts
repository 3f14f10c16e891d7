import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../../shared/atomic-write.js';
import type { ResolvedProvider } from '../providers/provider-spec.js';
import type { SessionRecord } from './session-store.js';

/** What a session's program is started with besides its provider's command. */
export interface ProgramPlace {
  cityName: string;
  cityRoot: string;
  env: NodeJS.ProcessEnv;
  /** The directory holding this controller's `ctl` launcher (ctl-launcher.ts): first on every program's PATH. */
  ctlBin?: string;
}

/** The file in a session's directory naming the bead it holds now (empty when none). */
export const HELD_BEAD_FILE = 'bead';
/** The shell start-up file (`BASH_ENV`) that sets `CTL_BEAD` from it in every shell the program starts. */
export const SHELL_ENV_FILE = 'shell-env.sh';
/** The directory given to zsh as `ZDOTDIR`: start-up files that read the person's own, then set `CTL_BEAD`. */
export const ZSH_DIR = 'zsh';
/** Where the person's own zsh start-up files are (their `ZDOTDIR`; unset: their home). */
const USER_ZDOTDIR = 'CTL_USER_ZDOTDIR';

/**
 * The program's environment: the controller's, the provider's, its agent's `env`, the `CTL_*` names of where it runs
 * and for whom (`CTL_WORKTREE` and `CTL_BRANCH` in its own worktree), and `ctl` first on its PATH.
 */
export function sessionEnvironment(
  place: ProgramPlace,
  record: SessionRecord,
  provider: ResolvedProvider,
  work: { dir: string; bead?: string; agentEnv?: Record<string, string> },
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...place.env,
    ...provider.env,
    ...work.agentEnv,
    CTL_CITY: place.cityName,
    CTL_CITY_ROOT: place.cityRoot,
    CTL_SESSION_ID: record.id,
    CTL_SESSION_NAME: record.session_name,
    CTL_TEMPLATE: record.template,
    CTL_PROVIDER: provider.name,
  };
  // A session in its own worktree: the branch it commits to and the worktree's top (its program may work lower).
  if (record.worktree && record.branch) {
    env.CTL_WORKTREE = record.worktree;
    env.CTL_BRANCH = record.branch;
  } else {
    delete env.CTL_WORKTREE;
    delete env.CTL_BRANCH;
  }
  for (const [name, value] of Object.entries(agentVariables(record, work.bead))) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  if (place.ctlBin !== undefined) env.PATH = ctlFirstOnPath(place.ctlBin, env.PATH);
  env.BASH_ENV = shellEnvFile(work.dir, env.BASH_ENV, place.ctlBin);
  // zsh reads no BASH_ENV, and it is the shell Claude Code and Codex pick where SHELL names it or names nothing.
  const zdotdir = zshStartupDir(work.dir, place.ctlBin);
  if (env.ZDOTDIR === undefined) delete env[USER_ZDOTDIR];
  else if (env.ZDOTDIR !== zdotdir) env[USER_ZDOTDIR] = env.ZDOTDIR;
  env.ZDOTDIR = zdotdir;
  // A bash whose stdin is a socket (Node's pipes are) and that believes it is the first shell takes itself for an
  // ssh login and reads ~/.bashrc instead of BASH_ENV; a program started outside any shell (systemd) has no SHLVL.
  env.SHLVL ??= '1';
  return env;
}

/** `CTL_AGENT` for an agent's session, `CTL_BEAD` while it holds a bead (unset otherwise, whatever was inherited). */
export function agentVariables(record: SessionRecord, bead: string | undefined): NodeJS.ProcessEnv {
  return {
    CTL_AGENT: record.kind === 'agent' ? record.template : undefined,
    CTL_BEAD: bead || undefined,
  };
}

/** `PATH` with the launcher's directory first (and not again further on). */
export function ctlFirstOnPath(bin: string, path: string | undefined): string {
  const rest = (path ?? '').split(':').filter((dir) => dir !== '' && dir !== bin);
  return [bin, ...rest].join(':');
}

/**
 * The line that puts the launcher's directory first on PATH again, where a login shell's profile has set a PATH
 * of its own: Codex runs its commands in one (`bash -lc`), and Debian's /etc/profile sets PATH outright.
 */
function ctlFirstAgain(ctlBin: string | undefined): string[] {
  if (ctlBin === undefined) return [];
  const bin = shellQuote(ctlBin);
  return [`case $PATH in ${bin}:*) ;; *) PATH=${bin}:$PATH; export PATH ;; esac`];
}

/**
 * Writes the session's `BASH_ENV` file and returns its path. A program's environment is fixed when it starts,
 * but a session is handed beads while it runs: every bash the program starts (Claude Code's Bash tool, a
 * script) reads this file first: it runs the `BASH_ENV` the program would otherwise have had, then sets `CTL_BEAD`
 * from the held-bead file as it is at that moment. A login bash reads it after its profiles: it puts `ctl` first
 * on PATH again.
 */
export function shellEnvFile(sessionDir: string, inherited: string | undefined, ctlBin?: string): string {
  const path = join(sessionDir, SHELL_ENV_FILE);
  const bead = shellQuote(join(sessionDir, HELD_BEAD_FILE));
  const lines = ['# Written by ctl for this session: CTL_BEAD is the bead the session holds now.'];
  // What the program's shells read anyway comes first, so that ours has the last word on CTL_BEAD.
  if (inherited && inherited !== path) lines.push(`. ${shellQuote(inherited)}`);
  lines.push(`if [ -s ${bead} ]; then CTL_BEAD=$(cat ${bead}); export CTL_BEAD; else unset CTL_BEAD; fi`);
  lines.push(...ctlFirstAgain(ctlBin));
  writeFileAtomic(path, `${lines.join('\n')}\n`);
  return path;
}

/**
 * Writes the session's zsh start-up directory (its shells' `ZDOTDIR`) and returns its path. Each file runs the
 * person's own file of that name from where their zsh would have read it, and `.zshenv`, which every zsh reads,
 * then sets `CTL_BEAD` as the bash file does. `ZDOTDIR` is ours again after each, so that the files still to
 * come and the shells this one starts come here first too. After each file but `.zlogout`, `ctl` is first on
 * PATH again (a system zprofile may read /etc/profile, which sets PATH outright).
 */
export function zshStartupDir(sessionDir: string, ctlBin?: string): string {
  const dir = join(sessionDir, ZSH_DIR);
  mkdirSync(dir, { recursive: true });
  const bead = shellQuote(join(sessionDir, HELD_BEAD_FILE));
  for (const name of ['.zshenv', '.zprofile', '.zshrc', '.zlogin', '.zlogout']) {
    const lines = [
      `# Written by ctl for this session: runs your own ${name}${name === '.zshenv' ? ', then sets CTL_BEAD' : ''}.`,
      `__ctl_zdotdir=$ZDOTDIR; ZDOTDIR=\${${USER_ZDOTDIR}:-$HOME}`,
      `if [[ -r "$ZDOTDIR/${name}" ]]; then builtin source "$ZDOTDIR/${name}"; fi`,
    ];
    // A person's .zshenv may move their start-up files elsewhere (ZDOTDIR=~/.config/zsh): the rest are read there.
    if (name === '.zshenv')
      lines.push(
        `if [[ $ZDOTDIR != \${${USER_ZDOTDIR}:-$HOME} ]]; then export ${USER_ZDOTDIR}=$ZDOTDIR; fi`,
        `if [ -s ${bead} ]; then CTL_BEAD=$(cat ${bead}); export CTL_BEAD; else unset CTL_BEAD; fi`,
      );
    if (name !== '.zlogout') lines.push(...ctlFirstAgain(ctlBin));
    lines.push('ZDOTDIR=$__ctl_zdotdir; unset __ctl_zdotdir');
    writeFileAtomic(join(dir, name), `${lines.join('\n')}\n`);
  }
  return dir;
}

/** Records the bead a session holds now (or none) where its shells read it. */
export function writeHeldBead(sessionDir: string, bead: string | undefined): void {
  writeFileAtomic(join(sessionDir, HELD_BEAD_FILE), bead ?? '');
}

/** A string as one single-quoted shell word. */
export function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/** An agent's directory inside the city is made when missing; one outside it must exist. */
export function ensureWorkDir(dir: string, cityRoot: string): void {
  if (existsSync(dir)) return;
  if (dir !== cityRoot && !dir.startsWith(`${cityRoot}/`))
    throw new Error(`its working directory ${dir} does not exist`);
  mkdirSync(dir, { recursive: true });
}
