import { stripVTControlCharacters } from 'node:util';
import { renderUsage } from 'citty';
import { ctl, ctlListing, metaOf } from './_tree.js';
import type { AnyCommand } from './_types.js';

const GLOBAL_FLAGS_TEXT = `GLOBAL FLAGS

  --api, --city and --json may also come before the command: ctl --city alpha bead list
  Durations: 90s, 5m, 1h30m, 1d (a bare number is seconds); times: RFC 3339 (2026-11-23T09:00:00Z)
  Shell completion: ctl completion bash|zsh|fish`;

/** The help of `cmd`, which `path` names (`['bead', 'create']`): citty's usage in plain text, and its examples. */
export async function usage(cmd: AnyCommand, path: string[]): Promise<string> {
  // citty names a command by its parent's name and its own; give it the whole chain.
  const parent = path.length ? { meta: { name: ['ctl', ...path.slice(0, -1)].join(' ') } } : undefined;
  const rendered = stripVTControlCharacters(await renderUsage(cmd === ctl ? ctlListing : cmd, parent));
  const sections = [rendered.replace(/[ \t]+$/gm, '').trimEnd()];
  if (path.length === 0) sections.push(GLOBAL_FLAGS_TEXT);
  const { examples } = await metaOf(cmd);
  if (examples?.length) sections.push(`EXAMPLES\n\n${examples.map((e) => `  ${e}`).join('\n')}`);
  return sections.join('\n\n') + '\n';
}
