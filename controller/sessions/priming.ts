import { join } from 'node:path';
import { writeFileAtomic } from '../../shared/atomic-write.js';
import type { ResolvedProvider } from '../providers/provider-spec.js';
import { shellQuote } from './session-environment.js';

/** How a program is primed at start: its agent's prompt as its system prompt, its priming hooks' settings. */
export interface Priming {
  /** The agent's prompt, and the file in the session's directory that holds it. */
  systemPrompt?: { text: string; file: string };
  /** The session's own settings file (hooks that run `ctl prime`). */
  settingsFile?: string;
}

/** The file of a session's directory holding its agent's prompt as its program last started with it. */
export const SYSTEM_PROMPT_FILE = 'system-prompt.md';
/** The session's own Claude Code settings: never the person's `~/.claude`. */
export const SETTINGS_FILE = 'settings.json';

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
  }
  if (agentSession && provider.settings_args !== undefined) {
    const file = join(sessionDir, SETTINGS_FILE);
    writeFileAtomic(file, `${JSON.stringify(primingSettings(ctlBin), null, 2)}\n`);
    priming.settingsFile = file;
  }
  return priming;
}

/** Whether the provider's program takes an agent's prompt as its system prompt (else it is the first turn). */
export function takesSystemPrompt(provider: ResolvedProvider): boolean {
  return provider.system_prompt_args !== undefined && provider.system_prompt_args.length > 0;
}

/**
 * Claude Code settings whose hooks print `ctl prime` into the conversation: when the session starts (or resumes,
 * or is cleared) and when its context is compacted, so a long-running agent keeps its role and work in view.
 */
export function primingSettings(ctlBin: string | undefined): Record<string, unknown> {
  const prime = `${ctlBin !== undefined ? shellQuote(join(ctlBin, 'ctl')) : 'ctl'} prime`;
  const hook = [{ hooks: [{ type: 'command', command: prime, timeout: 30 }] }];
  return { hooks: { SessionStart: hook, PreCompact: hook } };
}

/** The arguments that prime the program, with `{prompt_file}`, `{prompt_toml}` and `{settings_file}` filled in. */
export function primingArgs(provider: ResolvedProvider, priming: Priming | undefined): string[] {
  const args: string[] = [];
  const prompt = priming?.systemPrompt;
  if (prompt && provider.system_prompt_args) {
    for (const arg of provider.system_prompt_args) {
      args.push(arg.replaceAll('{prompt_file}', prompt.file).replaceAll('{prompt_toml}', tomlString(prompt.text)));
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
