import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../../shared/atomic-write.js';
import type { SessionHookEvent } from '../../shared/dto/sessions.js';
import type { ResolvedProvider } from '../providers/provider-spec.js';
import { shellQuote } from './session-environment.js';

/** How a program is primed at start: its agent's prompt as its system prompt, its priming hooks' settings. */
export interface Priming {
  /**
   * The agent's prompt, the file in the session's directory that holds it, and (for `{context_dir:NAME}`) the
   * directory that holds it alone as a context file named NAME.
   */
  systemPrompt?: { text: string; file: string; contextDir?: string };
  /** The session's own settings file (hooks that run `ctl prime`, and in tmux those that report its state). */
  settingsFile?: string;
}

/** The file of a session's directory holding its agent's prompt as its program last started with it. */
export const SYSTEM_PROMPT_FILE = 'system-prompt.md';
/** The session's own Claude Code settings: never the person's `~/.claude`. */
export const SETTINGS_FILE = 'settings.json';
/** The directory of a session's directory holding only its agent's prompt, as a CLI's context file. */
export const CONTEXT_DIR = 'context';

/**
 * `{prompt_file}`, `{prompt_toml}`, `{prompt_text}` (the prompt itself, one argument) and `{context_dir:NAME}` (a
 * directory holding only the prompt, in a file named NAME: Gemini CLI reads `GEMINI.md` as a context file from a
 * directory it includes).
 */
const PROMPT_PLACEHOLDER = /\{(prompt_file|prompt_toml|prompt_text|context_dir:([^{}/\\]+))\}/g;

/** The file names a provider's `{context_dir:NAME}` fields ask for. */
function contextFileNames(provider: ResolvedProvider): string[] {
  const names = (provider.system_prompt_args ?? []).flatMap((arg) =>
    [...arg.matchAll(PROMPT_PLACEHOLDER)].flatMap((m) => (m[2] !== undefined ? [m[2]] : [])),
  );
  return [...new Set(names)].filter((name) => name !== '.' && name !== '..');
}

/**
 * Writes what the program is primed with into the session's directory, as far as its provider takes it: the
 * agent's prompt where it has a system prompt (`system_prompt_args`), hooks where it takes a settings file
 * (`settings_args`, an agent's session only). What the provider cannot take is left out (the prompt is then the
 * session's first turn: `takesSystemPrompt`).
 */
export function preparePriming(
  sessionDir: string,
  provider: ResolvedProvider,
  prompt: string | undefined,
  agentSession: boolean,
  ctlBin: string | undefined,
): Priming {
  const priming: Priming = {};
  if (prompt !== undefined && takesSystemPrompt(provider)) {
    const file = join(sessionDir, SYSTEM_PROMPT_FILE);
    writeFileAtomic(file, prompt);
    priming.systemPrompt = { text: prompt, file };
    const names = contextFileNames(provider);
    if (names.length > 0) {
      // Rebuilt at every start: the CLI reads everything in it, so nothing of an earlier start may stay.
      const contextDir = join(sessionDir, CONTEXT_DIR);
      rmSync(contextDir, { recursive: true, force: true });
      mkdirSync(contextDir, { recursive: true });
      for (const name of names) writeFileAtomic(join(contextDir, name), prompt);
      priming.systemPrompt.contextDir = contextDir;
    }
  }
  // A program in tmux is read off its screen unless its hooks report what it does: any session of it gets them.
  const reports = provider.runtime === 'tmux';
  if ((agentSession || reports) && provider.settings_args !== undefined) {
    const file = join(sessionDir, SETTINGS_FILE);
    const settings = sessionSettings(ctlBin, { prime: agentSession, report: reports });
    writeFileAtomic(file, `${JSON.stringify(settings, null, 2)}\n`);
    priming.settingsFile = file;
  }
  return priming;
}

/** Whether the provider's program takes an agent's prompt as its system prompt (else it is the first turn). */
export function takesSystemPrompt(provider: ResolvedProvider): boolean {
  return provider.system_prompt_args !== undefined && provider.system_prompt_args.length > 0;
}

/**
 * The hooks that report a program's state to its session (`ctl hook-event <event>`, the hook's JSON on its
 * stdin), and whether each runs in the background. Those that order a turn — its prompt submitted, a permission
 * prompt, its end — hold the program until they are posted (about the time `ctl` takes to start), so the session
 * hears them in the order they happened; the tool hooks, one per tool call, do not hold it (a late one is matched
 * to its call or dropped).
 */
const REPORTING_HOOKS: Record<SessionHookEvent, { async: boolean }> = {
  SessionStart: { async: false },
  UserPromptSubmit: { async: false },
  PreToolUse: { async: true },
  PostToolUse: { async: true },
  PermissionRequest: { async: false },
  Notification: { async: false },
  Stop: { async: false },
  StopFailure: { async: false },
  SubagentStop: { async: false },
};
/** A reporting hook posts once, quickly, or not at all (a controller that is gone must not hold the program). */
const REPORT_TIMEOUT_S = 10;

/**
 * Claude Code settings: with `prime`, hooks that print `ctl prime` into the conversation when the session starts
 * (or resumes, or is cleared) and when its context is compacted, so a long-running agent keeps its role and work
 * in view; with `report`, hooks that report its state (`REPORTING_HOOKS`).
 */
export function sessionSettings(
  ctlBin: string | undefined,
  wanted: { prime: boolean; report: boolean },
): Record<string, unknown> {
  const ctl = ctlBin !== undefined ? shellQuote(join(ctlBin, 'ctl')) : 'ctl';
  const hooks: Record<string, { type: string; command: string; timeout: number; async?: boolean }[]> = {};
  const add = (event: string, hook: { type: string; command: string; timeout: number; async?: boolean }) =>
    (hooks[event] ??= []).push(hook);
  if (wanted.prime) {
    for (const event of ['SessionStart', 'PreCompact']) {
      add(event, { type: 'command', command: `${ctl} prime`, timeout: 30 });
    }
  }
  if (wanted.report) {
    for (const [event, { async }] of Object.entries(REPORTING_HOOKS)) {
      const command = `${ctl} hook-event ${event}`;
      add(event, { type: 'command', command, timeout: REPORT_TIMEOUT_S, ...(async ? { async } : {}) });
    }
  }
  return { hooks: Object.fromEntries(Object.entries(hooks).map(([event, list]) => [event, [{ hooks: list }]])) };
}

/** The arguments that prime the program, with the prompt's `{…}` fields and `{settings_file}` filled in. */
export function primingArgs(provider: ResolvedProvider, priming: Priming | undefined): string[] {
  const args: string[] = [];
  const prompt = priming?.systemPrompt;
  if (prompt && provider.system_prompt_args) {
    for (const arg of provider.system_prompt_args) {
      // In one pass: a prompt that holds a field's text is never filled in again.
      args.push(
        arg.replace(PROMPT_PLACEHOLDER, (_, name: string) =>
          name === 'prompt_file'
            ? prompt.file
            : name === 'prompt_toml'
              ? tomlString(prompt.text)
              : name === 'prompt_text'
                ? prompt.text
                : (prompt.contextDir ?? ''),
        ),
      );
    }
  }
  if (priming?.settingsFile !== undefined && provider.settings_args) {
    for (const arg of provider.settings_args) args.push(arg.replaceAll('{settings_file}', priming.settingsFile));
  }
  return args;
}

/** A TOML basic string: JSON's escapes are TOML's too, four-digit `\u` escapes included. */
function tomlString(text: string): string {
  return JSON.stringify(text);
}
