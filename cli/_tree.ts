import { defineCommand } from 'citty';
import { VERSION } from '../shared/version.js';
import { didYouMean, isFlagWord, positionalsOf } from './_args.js';
import { UnknownCommand } from './_errors.js';
import { GLOBAL_FLAGS } from './_flags.js';
import type { AnyCommand, CtlMeta, Flags } from './_types.js';

// The command tree: every command's name and the module that defines it, the one place that lists them. Each
// module is loaded only when its command runs (`ctl controller run`, which every city's controller is, loads
// only what it needs).

const meta: CtlMeta = {
  name: 'ctl',
  version: VERSION,
  description: 'Supervisor and control plane for cities of AI coding agents',
  examples: [
    'ctl init ~/cities/alpha --start-command examples/agents/echo.sh   # create a city and wait until it runs',
    'ctl cities                                                       # every city, its status and path',
    'ctl --city alpha bead list                                       # global flags may come first',
    'ctl help bead create                                             # the same as ctl bead create --help',
  ],
};

export const ctl: AnyCommand = defineCommand({
  meta,
  subCommands: {
    supervisor: () => import('./commands/supervisor.js').then((m) => m.supervisorCommand),
    init: () => import('./commands/cities.js').then((m) => m.initCommand),
    cities: () => import('./commands/cities.js').then((m) => m.citiesCommand),
    register: () => import('./commands/cities.js').then((m) => m.registerCommand),
    unregister: () => import('./commands/cities.js').then((m) => m.unregisterCommand),
    city: () => import('./commands/cities.js').then((m) => m.cityCommand),
    status: () => import('./commands/status.js').then((m) => m.statusCommand),
    doctor: () => import('./commands/doctor.js').then((m) => m.doctorCommand),
    controller: () => import('./commands/controller.js').then((m) => m.controllerCommand),
    events: () => import('./commands/events.js').then((m) => m.eventsCommand),
    bead: () => import('./commands/beads.js').then((m) => m.beadCommand),
    mail: () => import('./commands/mail.js').then((m) => m.mailCommand),
    convoy: () => import('./commands/convoys.js').then((m) => m.convoyCommand),
    session: () => import('./commands/sessions.js').then((m) => m.sessionCommand),
    provider: () => import('./commands/providers.js').then((m) => m.providerCommand),
    agent: () => import('./commands/agents.js').then((m) => m.agentCommand),
    sling: () => import('./commands/agents.js').then((m) => m.slingCommand),
    formula: () => import('./commands/formulas.js').then((m) => m.formulaCommand),
    run: () => import('./commands/formulas.js').then((m) => m.runCommand),
    order: () => import('./commands/orders.js').then((m) => m.orderCommand),
    usage: () => import('./commands/usage.js').then((m) => m.usageCommand),
    rig: () => import('./commands/rigs.js').then((m) => m.rigCommand),
    config: () => import('./commands/config.js').then((m) => m.configCommand),
    pack: () => import('./commands/packs.js').then((m) => m.packCommand),
    service: () => import('./commands/services.js').then((m) => m.serviceCommand),
    extmsg: () => import('./commands/extmsg.js').then((m) => m.extmsgCommand),
    token: () => import('./commands/tokens.js').then((m) => m.tokenCommand),
    ui: () => import('./commands/ui.js').then((m) => m.uiCommand),
    help: () => import('./commands/help.js').then((m) => m.helpCommand),
    version: () => import('./commands/help.js').then((m) => m.versionCommand),
    completion: () => import('./commands/completion.js').then((m) => m.completionCommand),
  },
});

async function resolved<T>(value: T | Promise<T> | (() => T | Promise<T>) | undefined): Promise<T | undefined> {
  return typeof value === 'function' ? (value as () => T | Promise<T>)() : value;
}

/** A command's subcommands, loaded, by name ({} for a leaf). */
export async function subCommandsOf(cmd: AnyCommand): Promise<Record<string, AnyCommand>> {
  const subs = (await resolved(cmd.subCommands)) ?? {};
  const out: Record<string, AnyCommand> = {};
  for (const [name, sub] of Object.entries(subs)) out[name] = (await resolved(sub)) as AnyCommand;
  return out;
}

/** A command's flags and positionals. */
export async function flagsOf(cmd: AnyCommand): Promise<Flags> {
  return ((await resolved(cmd.args)) ?? {}) as Flags;
}

export async function metaOf(cmd: AnyCommand): Promise<Partial<CtlMeta>> {
  return (await resolved(cmd.meta)) ?? {};
}

export interface Found {
  cmd: AnyCommand;
  /** The words naming it: `['city', 'start']`. */
  path: string[];
  /** Global flags given before its name (or between the names of its groups), to be passed on to it. */
  globals: string[];
  /** The words after its name. */
  rest: string[];
}

/** How many words a global flag takes: 2 for `--city alpha`, 1 for `--json` or `--city=alpha`, 0 for others. */
function globalFlagWidth(word: string): number {
  const name = word.replace(/^--/, '').split('=')[0];
  const flag = GLOBAL_FLAGS[name] ?? GLOBAL_FLAGS[name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)];
  if (!word.startsWith('--') || !flag) return 0;
  return flag.type === 'boolean' || word.includes('=') ? 1 : 2;
}

/**
 * The command `words` name, walking the tree: global flags before or between command names are carried over to
 * it (`ctl --city alpha bead list`); a word that names no subcommand of a group is an unknown command, with the
 * nearest name as a suggestion.
 */
export async function findCommand(words: string[]): Promise<Found> {
  let cmd = ctl;
  const path: string[] = [];
  const globals: string[] = [];
  let i = 0;
  for (;;) {
    // Names only: a command's module is loaded when it is the one named (`ctl controller run` loads no other).
    const subs = (await resolved(cmd.subCommands)) ?? {};
    if (Object.keys(subs).length === 0) break;
    const width = i < words.length ? globalFlagWidth(words[i]) : 0;
    if (width > 0) {
      globals.push(...words.slice(i, i + width));
      i += width;
      continue;
    }
    const word = words[i];
    if (word === undefined || word === '--' || isFlagWord(word)) break;
    if (Object.hasOwn(subs, word)) {
      path.push(word);
      cmd = (await resolved(subs[word])) as AnyCommand;
      i++;
      continue;
    }
    // A word a command with its own `run` takes as an argument is not a subcommand.
    if (cmd.run && positionalsOf(await flagsOf(cmd)).length > 0) break;
    const where = path.length ? `ctl ${path.join(' ')}` : 'ctl';
    const suggestion = didYouMean(word, Object.keys(subs));
    throw new UnknownCommand(`unknown command ${JSON.stringify(word)}${suggestion || `; see "${where} --help"`}`, path);
  }
  return { cmd, path, globals, rest: words.slice(i) };
}

/** Every command of the tree, depth first, with the words naming it. */
export async function walkTree(visit: (cmd: AnyCommand, path: string[]) => void | Promise<void>): Promise<void> {
  const walk = async (cmd: AnyCommand, path: string[]) => {
    await visit(cmd, path);
    for (const [name, sub] of Object.entries(await subCommandsOf(cmd))) await walk(sub, [...path, name]);
  };
  await walk(ctl, []);
}
