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
    'ctl dolt list                                                    # a pack command: ctl BINDING COMMAND (ctl pack commands)',
  ],
};

/**
 * Every top-level command: its description, for `ctl help` to list without loading a module (loading them all,
 * with the generated client each imports, was most of what `ctl help` cost), and the loader of its module. A
 * unit test (test/unit/cli-tree.test.ts) holds each description to the one its module declares.
 */
export const TOP_LEVEL: Record<string, [description: string, load: () => Promise<AnyCommand>]> = {
  supervisor: [
    'Run, start, stop and inspect the supervisor',
    () => import('./commands/supervisor.js').then((m) => m.supervisorCommand),
  ],
  init: ['Create a city and wait until it runs', () => import('./commands/cities.js').then((m) => m.initCommand)],
  cities: ['List registered cities', () => import('./commands/cities.js').then((m) => m.citiesCommand)],
  register: [
    'Attach an existing city directory to the supervisor and wait until it runs',
    () => import('./commands/cities.js').then((m) => m.registerCommand),
  ],
  unregister: [
    'Detach a city from the supervisor and wait until its controller stops (its directory is left as it is)',
    () => import('./commands/cities.js').then((m) => m.unregisterCommand),
  ],
  city: ['Start, stop, suspend and resume cities', () => import('./commands/cities.js').then((m) => m.cityCommand)],
  status: [
    'Status of a city (by name, --city, CTL_CITY or the working directory), else of the supervisor',
    () => import('./commands/status.js').then((m) => m.statusCommand),
  ],
  doctor: [
    'Check what breaks cities in practice — supervisor, machine, each city and its packs’ checks — and how to fix each; exits 1 when one fails',
    () => import('./commands/doctor.js').then((m) => m.doctorCommand),
  ],
  controller: ['Per-city controller', () => import('./commands/controller.js').then((m) => m.controllerCommand)],
  events: [
    'List, watch or follow events (JSON Lines; one readable line each on a terminal)',
    () => import('./commands/events.js').then((m) => m.eventsCommand),
  ],
  bead: [
    "Create, list and change the city's beads (work units)",
    () => import('./commands/beads.js').then((m) => m.beadCommand),
  ],
  mail: ['Messages between agents and people', () => import('./commands/mail.js').then((m) => m.mailCommand)],
  prime: [
    "A session's role prompt, current work and unread mail, as text for a hook or a first turn",
    () => import('./commands/agent-side.js').then((m) => m.primeCommand),
  ],
  hook: [
    'The bead the session should work on now (exit 3, printing nothing, when there is none)',
    () => import('./commands/agent-side.js').then((m) => m.hookCommand),
  ],
  'hook-event': [
    "Report a hook of the session's program to its session (run by the hooks ctl sets up; reads the hook's JSON on stdin)",
    () => import('./commands/agent-side.js').then((m) => m.hookEventCommand),
  ],
  convoy: [
    'Convoys: beads tracked together to completion',
    () => import('./commands/convoys.js').then((m) => m.convoyCommand),
  ],
  session: [
    "Sessions: live processes of a provider's program that people and programs talk to",
    () => import('./commands/sessions.js').then((m) => m.sessionCommand),
  ],
  provider: [
    'Providers: how a city starts and speaks with an agent program',
    () => import('./commands/providers.js').then((m) => m.providerCommand),
  ],
  agent: [
    'Agents: the workers a city keeps running and routes work to',
    () => import('./commands/agents.js').then((m) => m.agentCommand),
  ],
  sling: [
    'Route work to an agent or a session: a bead, several, a convoy’s open members, free text made a bead, or a run of a formula',
    () => import('./commands/agents.js').then((m) => m.slingCommand),
  ],
  formula: [
    'Formulas: recipes of steps that runs (molecules of beads) are made from',
    () => import('./commands/formulas.js').then((m) => m.formulaCommand),
  ],
  run: [
    'Runs: molecules made from formulas, worked through by agents',
    () => import('./commands/formulas.js').then((m) => m.runCommand),
  ],
  wait: [
    'Waits: a session waits for beads to close and is nudged when they have; runs wait at their gates',
    () => import('./commands/waits.js').then((m) => m.waitCommand),
  ],
  order: [
    'Orders: commands and formulas that fire on a schedule, an event or a condition',
    () => import('./commands/orders.js').then((m) => m.orderCommand),
  ],
  webhook: [
    'Webhooks: the [[webhook]] tables a city takes deliveries for, and the orders they fire',
    () => import('./commands/webhooks.js').then((m) => m.webhookCommand),
  ],
  usage: [
    'Tokens and cost of the city’s sessions, as their providers reported them: today, by agent, provider and session',
    () => import('./commands/usage.js').then((m) => m.usageCommand),
  ],
  rig: [
    'Rigs: the project directories a city’s agents work in',
    () => import('./commands/rigs.js').then((m) => m.rigCommand),
  ],
  config: [
    'The city’s configuration: composed, explained, validated',
    () => import('./commands/config.js').then((m) => m.configCommand),
  ],
  pack: [
    'Packs: bundles of agents, formulas, orders and commands a city imports',
    () => import('./commands/packs.js').then((m) => m.packCommand),
  ],
  service: [
    'Workspace services: programs and URLs reached through /v0/city/<city>/svc/<name>/',
    () => import('./commands/services.js').then((m) => m.serviceCommand),
  ],
  review: [
    'Reviews: finished work held for a person (merge = "review"), approved, sent back or abandoned',
    () => import('./commands/reviews.js').then((m) => m.reviewCommand),
  ],
  host: [
    'Hosts: the machines a city’s sessions run on (this one, and [[host]] tables reached over OpenSSH)',
    () => import('./commands/hosts.js').then((m) => m.hostCommand),
  ],
  extmsg: [
    'External messaging: chat adapters, the conversations bound to sessions, their transcripts',
    () => import('./commands/extmsg.js').then((m) => m.extmsgCommand),
  ],
  token: [
    'API tokens: access for other accounts and machines (managed by the supervisor’s own user)',
    () => import('./commands/tokens.js').then((m) => m.tokenCommand),
  ],
  whoami: [
    "Who the supervisor takes you for: your account, token:NAME with CTL_TOKEN, or on a remote host your session's agent — the author your comments and events record",
    () => import('./commands/whoami.js').then((m) => m.whoamiCommand),
  ],
  top: [
    'A live full-screen view of a city (or every city): sessions waiting on you first, agents, recent events; keys to allow, deny, attach, open',
    () => import('./commands/top.js').then((m) => m.topCommand),
  ],
  ui: [
    'Open the dashboard in a browser, signed in as you (a one-time link, valid a minute); prints the link where no browser can be opened',
    () => import('./commands/ui.js').then((m) => m.uiCommand),
  ],
  help: [
    'Show how to use ctl, or a command (the same as COMMAND --help)',
    () => import('./commands/help.js').then((m) => m.helpCommand),
  ],
  version: [
    'Print the version of ctl (the same as --version)',
    () => import('./commands/help.js').then((m) => m.versionCommand),
  ],
  completion: [
    'Print a shell completion script for bash, zsh or fish: commands, flags, and names (cities, agents, sessions, beads, formulas, hosts) from the running supervisor',
    () => import('./commands/completion.js').then((m) => m.completionCommand),
  ],
};

export const ctl: AnyCommand = defineCommand({
  meta,
  subCommands: Object.fromEntries(Object.entries(TOP_LEVEL).map(([name, [, load]]) => [name, load])),
});

/** The root as its help shows it: each subcommand a name and a description, so that rendering it loads no module. */
export const ctlListing: AnyCommand = defineCommand({
  meta,
  subCommands: Object.fromEntries(
    Object.entries(TOP_LEVEL).map(([name, [description]]) => [name, defineCommand({ meta: { name, description } })]),
  ),
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
  const [name = ''] = word.replace(/^--/, '').split('=');
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
    const width = i < words.length ? globalFlagWidth(words[i]!) : 0;
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
