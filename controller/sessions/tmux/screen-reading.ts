import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import type { ScreenRules } from './screen-rules.js';

// Reading a terminal program's screen by its rules: its input line, its status file, a permission prompt's place,
// a turn's reply. Pure functions of a captured screen; the tmux runtime decides what they mean for a session.

/** The program's input line (by its rules' prompt, among the screen's last lines) and what is typed on it. */
export function inputLine(screen: string[], rules: ScreenRules): { index: number; typed: string } | undefined {
  let seen = 0;
  for (let i = screen.length - 1; i >= 0 && seen < rules.promptLines; i--) {
    if (screen[i]!.trim() === '') continue;
    seen++;
    const match = rules.prompt.exec(screen[i]!);
    if (match) return { index: i, typed: screen[i]!.slice(match[0].length).trim() };
  }
  return undefined;
}

/** What the program's status file says, when its rules name one and it can be read. */
export function statusOf(
  rules: ScreenRules,
  env: NodeJS.ProcessEnv,
  pid: number | undefined,
): 'idle' | 'busy' | 'asking' | undefined {
  if (!rules.statusFile || pid === undefined) return undefined;
  const path = rules.statusFile.replaceAll('{home}', env.HOME ?? homedir()).replaceAll('{pid}', String(pid));
  try {
    const file = JSON.parse(readFileSync(path, 'utf8')) as { status?: string; waitingFor?: string };
    if (file.status === 'idle') return 'idle';
    if (file.status === 'waiting') return /permission/i.test(file.waitingFor ?? '') ? 'asking' : 'idle';
    return file.status ? 'busy' : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether the permission prompt on the screen came after this turn's message: while a message is typed, or
 * right after its Enter, the last turn's answered menu can still be on the screen above it, and is not a
 * question about this one.
 */
export function askedSinceMessage(
  screen: string[],
  rules: ScreenRules,
  turn: { working?: boolean; echoed?: string; text: string },
): boolean {
  if (!turn.working) return false;
  const echoed = (turn.echoed ?? turn.text).replace(/\s+/g, ' ').trim();
  const message = screen.findLastIndex((l) => l.replace(/\s+/g, ' ').trim() === echoed);
  const prompt = screen.findLastIndex((l) => rules.permission!.pattern.test(l));
  return prompt > message;
}

/**
 * What appeared between the message as it was echoed and the input line, without the program's busy and
 * ignored lines, its reply prefix taken off.
 */
export function replyOf(screen: string[], rules: ScreenRules, echoed: string): string {
  const end = inputLine(screen, rules)?.index ?? screen.length;
  // The line exactly as it showed: a reply that quotes the message ends with its text too.
  // Spacing compared loosely: a program may draw its input line with other spaces than its history (NBSP).
  const same = (line: string) => line.replace(/\s+/g, ' ').trim() === echoed.replace(/\s+/g, ' ').trim();
  const start = screen.findLastIndex((l, i) => i < end && same(l));
  const { busy, ignore, replyPrefix } = rules;
  return screen
    .slice(start + 1, end)
    .filter((l) => !(busy?.test(l) ?? false) && !(ignore?.test(l) ?? false))
    .map((l) => (replyPrefix ? l.replace(replyPrefix, '') : l))
    .join('\n')
    .trim();
}
