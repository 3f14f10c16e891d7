import type { ArgsDef, CommandDef } from 'citty';

/** A failure the user should read: printed as one line, `ctl <command>: <message>`, with exit status 1. */
export class CliError extends Error {}

let current = '';

/** The command being run, for error messages (`supervisor stop`). */
export function currentCommand(): string {
  return current;
}

/**
 * A leaf command: citty accepts unknown flags silently, which would let a typo change nothing and succeed;
 * here every flag must be declared.
 */
export function leafCommand<T extends ArgsDef>(path: string, def: CommandDef<T>): CommandDef<T> {
  return {
    ...def,
    setup: async (context) => {
      const args = (typeof def.args === 'function' ? await def.args() : await def.args) ?? {};
      // A command with subcommands of its own (`ctl events rotate`) leaves their flags to them.
      const subCommands =
        (typeof def.subCommands === 'function' ? await def.subCommands() : await def.subCommands) ?? {};
      const first = positionalArgs(context.rawArgs, args)[0];
      if (first !== undefined && first in subCommands) return;
      current = path;
      rejectUnknownFlags(context.rawArgs, args);
      await def.setup?.(context);
    },
  };
}

/** A flag as declared (`start-command`) and in camelCase (`startCommand`), both of which citty reads. */
function spellings(name: string): string[] {
  return [name, name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())];
}

function rejectUnknownFlags(rawArgs: string[], args: ArgsDef): void {
  const known = new Set<string>();
  for (const [name, def] of Object.entries(args)) {
    if (def.type === 'positional') continue;
    for (const spelling of spellings(name)) known.add(spelling);
    const aliases = 'alias' in def && def.alias ? (Array.isArray(def.alias) ? def.alias : [def.alias]) : [];
    for (const alias of aliases) known.add(alias);
  }
  const valued = valuedFlags(args);
  for (let i = 0; i < rawArgs.length; i++) {
    const raw = rawArgs[i];
    if (raw === '--') break;
    if (!raw.startsWith('-') || raw === '-') continue;
    const name = raw.replace(/^--?/, '').split('=')[0];
    const flag = name.replace(/^no-/, '');
    if (!known.has(flag)) throw new CliError(`unknown flag ${raw.split('=')[0]}`);
    // citty would read a flag that takes a value, given none, as "" (or take the next flag for it).
    const next = rawArgs[i + 1];
    if (!raw.includes('=') && valued.has(name) && (next === undefined || next.startsWith('--'))) {
      throw new CliError(`${raw} needs a value`);
    }
  }
  const positionals = Object.values(args).filter((d) => d.type === 'positional').length;
  const given = countPositionals(rawArgs, args);
  if (given > positionals)
    throw new CliError(`unexpected argument ${JSON.stringify(extraPositional(rawArgs, args, positionals))}`);
}

/** Every spelling of the flags that take a value. */
function valuedFlags(args: ArgsDef): Set<string> {
  const valued = new Set<string>();
  for (const [name, def] of Object.entries(args)) {
    if (def.type === 'string' || def.type === 'enum') {
      for (const spelling of spellings(name)) valued.add(spelling);
      const aliases = def.alias ? (Array.isArray(def.alias) ? def.alias : [def.alias]) : [];
      for (const alias of aliases) valued.add(alias);
    }
  }
  return valued;
}

function positionalArgs(rawArgs: string[], args: ArgsDef): string[] {
  const out: string[] = [];
  const valued = valuedFlags(args);
  for (let i = 0; i < rawArgs.length; i++) {
    const raw = rawArgs[i];
    if (raw === '--') {
      out.push(...rawArgs.slice(i + 1));
      break;
    }
    if (raw.startsWith('-') && raw !== '-') {
      if (!raw.includes('=') && valued.has(raw.replace(/^--?/, ''))) i++;
      continue;
    }
    out.push(raw);
  }
  return out;
}

function countPositionals(rawArgs: string[], args: ArgsDef): number {
  return positionalArgs(rawArgs, args).length;
}

function extraPositional(rawArgs: string[], args: ArgsDef, allowed: number): string {
  return positionalArgs(rawArgs, args)[allowed] ?? '';
}
