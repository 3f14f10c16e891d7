#!/usr/bin/env node
import { stripVTControlCharacters } from 'node:util';
import { defineCommand, renderUsage, runCommand, type CommandDef } from 'citty';
import { VERSION } from '../shared/version.js';
import { CliError, currentCommand } from './_command.js';

const main = defineCommand({
  meta: { name: 'ctl', version: VERSION, description: 'Supervisor and control plane for cities of AI coding agents' },
  // Loaded when used: `ctl controller run`, which every city's controller is, loads only what it needs.
  subCommands: {
    supervisor: () => import('./commands/supervisor.js').then((m) => m.supervisorCommand),
    init: () => import('./commands/cities.js').then((m) => m.initCommand),
    cities: () => import('./commands/cities.js').then((m) => m.citiesCommand),
    register: () => import('./commands/cities.js').then((m) => m.registerCommand),
    unregister: () => import('./commands/cities.js').then((m) => m.unregisterCommand),
    city: () => import('./commands/cities.js').then((m) => m.cityCommand),
    status: () => import('./commands/status.js').then((m) => m.statusCommand),
    controller: () => import('./commands/controller.js').then((m) => m.controllerCommand),
    events: () => import('./commands/events.js').then((m) => m.eventsCommand),
    bead: () => import('./commands/beads.js').then((m) => m.beadCommand),
    mail: () => import('./commands/mail.js').then((m) => m.mailCommand),
    convoy: () => import('./commands/convoys.js').then((m) => m.convoyCommand),
  },
});

/** The command a raw argument list names, with the words that name it (`['city', 'start']`). */
async function commandFor(rawArgs: string[]): Promise<{ cmd: CommandDef; path: string[] }> {
  let cmd: CommandDef = main;
  const path: string[] = [];
  for (const arg of rawArgs) {
    if (arg.startsWith('-')) break;
    const subs = (typeof cmd.subCommands === 'function' ? await cmd.subCommands() : await cmd.subCommands) ?? {};
    const next = subs[arg];
    if (!next) break;
    path.push(arg);
    cmd = (typeof next === 'function' ? await next() : await next) as CommandDef;
  }
  return { cmd, path };
}

async function usage(rawArgs: string[]): Promise<string> {
  const { cmd, path } = await commandFor(rawArgs);
  // citty names a command by its parent's name and its own; give it the whole chain.
  const parent = path.length ? { meta: { name: ['ctl', ...path.slice(0, -1)].join(' ') } } : undefined;
  return stripVTControlCharacters(await renderUsage(cmd, parent)) + '\n';
}

async function mainEntry(): Promise<void> {
  // Whoever reads our output went away (`ctl events --follow | head -1`): nothing more to say, to anyone.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
  const rawArgs = process.argv.slice(2);
  const { cmd, path } = await commandFor(rawArgs);
  const wantsHelp = rawArgs.includes('--help') || rawArgs.includes('-h');
  // A command group without a subcommand (`ctl`, `ctl city`) shows what it offers.
  const bareGroup = cmd.subCommands !== undefined && !cmd.run && rawArgs.every((a) => path.includes(a));
  if (wantsHelp || bareGroup) {
    process.stdout.write(await usage(rawArgs));
    return;
  }
  if (rawArgs.length === 1 && (rawArgs[0] === '--version' || rawArgs[0] === '-v')) {
    process.stdout.write(`${VERSION}\n`);
    return;
  }
  try {
    await runCommand(main, { rawArgs });
  } catch (err) {
    const command = currentCommand() || path.join(' ');
    const prefix = command ? `ctl ${command}` : 'ctl';
    let message: string;
    if (err instanceof CliError) message = err.message;
    else if ((err as { code?: string }).code?.startsWith('E_')) {
      message = `${stripVTControlCharacters((err as Error).message).replace(/\.$/, '')}; see "${prefix} --help"`;
    } else message = String((err as Error).message ?? err);
    process.stderr.write(`${prefix}: ${message}\n`);
    process.exitCode = 1;
  }
}

await mainEntry();
