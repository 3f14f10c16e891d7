#!/usr/bin/env node
import { stripVTControlCharacters } from 'node:util';
import { defineCommand, renderUsage, runCommand, type CommandDef } from 'citty';
import { VERSION } from '../shared/version.js';
import { CliError, currentCommand } from './_command.js';
import { cityCommand, citiesCommand, initCommand, registerCommand, unregisterCommand } from './commands/cities.js';
import { controllerCommand } from './commands/controller.js';
import { statusCommand } from './commands/status.js';
import { supervisorCommand } from './commands/supervisor.js';

const main = defineCommand({
  meta: { name: 'ctl', version: VERSION, description: 'Supervisor and control plane for cities of AI coding agents' },
  subCommands: {
    supervisor: supervisorCommand,
    init: initCommand,
    cities: citiesCommand,
    register: registerCommand,
    unregister: unregisterCommand,
    city: cityCommand,
    status: statusCommand,
    controller: controllerCommand,
  },
});

/** The command a raw argument list names, for `--help` (e.g. `ctl city start --help`). */
async function commandFor(rawArgs: string[]): Promise<[CommandDef, CommandDef | undefined]> {
  let cmd: CommandDef = main;
  let parent: CommandDef | undefined;
  for (const arg of rawArgs) {
    if (arg.startsWith('-')) break;
    const subs = (typeof cmd.subCommands === 'function' ? await cmd.subCommands() : await cmd.subCommands) ?? {};
    const next = subs[arg];
    if (!next) break;
    parent = cmd;
    cmd = (typeof next === 'function' ? await next() : await next) as CommandDef;
  }
  return [cmd, parent];
}

const stripAnsi = stripVTControlCharacters;

async function mainEntry(): Promise<void> {
  const rawArgs = process.argv.slice(2);
  if (rawArgs.includes('--help') || rawArgs.includes('-h')) {
    const [cmd, parent] = await commandFor(rawArgs);
    process.stdout.write(stripAnsi(await renderUsage(cmd, parent)) + '\n');
    return;
  }
  if (rawArgs.length === 1 && (rawArgs[0] === '--version' || rawArgs[0] === '-v')) {
    process.stdout.write(`${VERSION}\n`);
    return;
  }
  try {
    await runCommand(main, { rawArgs });
  } catch (err) {
    const command = currentCommand();
    const prefix = command ? `ctl ${command}` : 'ctl';
    const message =
      err instanceof CliError
        ? err.message
        : (err as { code?: string }).code?.startsWith('E_')
          ? `${stripAnsi((err as Error).message)}; see "ctl --help"`
          : String((err as Error).message ?? err);
    process.stderr.write(`${prefix}: ${message}\n`);
    process.exitCode = 1;
  }
}

await mainEntry();
