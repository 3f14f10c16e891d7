import type { ParsedArgs } from 'citty';
import { VERSION } from '../shared/version.js';
import { ApiProblem, CliError, UnknownCommand } from './_errors.js';
import { problemInFlags } from './_flags.js';
import { findCommand, flagsOf } from './_tree.js';
import type { Flags } from './_types.js';
import { usage } from './_usage.js';

// `ctl …`: finds the command the words name (_tree.ts), shows help when asked, runs it, and turns any failure
// into the one line of the contract: `ctl <command>: <message>` on stderr, exit status 1, nothing on stdout.

/** A failure as one line, in the command line's words (a 422 about `body.title` names `--title`). */
function messageOf(err: unknown, flags: Flags): string {
  if (err instanceof ApiProblem) return problemInFlags(err, flags) ?? err.message;
  if (err instanceof CliError) return err.message;
  // Not ours to expect: still one line, never a stack trace.
  const text = err instanceof Error ? err.message : String(err);
  return text.split('\n')[0] || 'unexpected error';
}

/** The binding and command words of a pack command line, for its error line (`dolt sql`). */
function packWords(words: string[]): string {
  const plain = words.filter((w, i) => !w.startsWith('--') && !/^--(city|api)$/.test(words[i - 1] ?? ''));
  return plain.slice(0, 2).join(' ');
}

async function main(): Promise<void> {
  // Whoever reads our output went away (`ctl events --follow | head -1`): nothing more to say, to anyone.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
  const words = process.argv.slice(2);
  if (words.length === 1 && (words[0] === '--version' || words[0] === '-v')) {
    process.stdout.write(`${VERSION}\n`);
    return;
  }
  let path: string[] = [];
  let flags: Flags = {};
  try {
    const found = await findCommand(words);
    path = found.path;
    const beforeDashes = words.includes('--') ? words.slice(0, words.indexOf('--')) : words;
    // `ctl`, or a group alone (`ctl city`), shows what it offers, as --help does.
    if (beforeDashes.includes('--help') || beforeDashes.includes('-h') || (!found.cmd.run && !found.rest.length)) {
      process.stdout.write(await usage(found.cmd, path));
      return;
    }
    if (!found.cmd.run) {
      throw new CliError(
        `expected a command before ${JSON.stringify(found.rest[0])}; see "ctl ${path.join(' ')} --help"`,
      );
    }
    flags = await flagsOf(found.cmd);
    // Our commands read their words themselves (_command.ts): citty's parse is not wanted.
    const rawArgs = [...found.globals, ...found.rest];
    await found.cmd.run({ rawArgs, args: { _: rawArgs } as unknown as ParsedArgs, cmd: found.cmd });
  } catch (err) {
    // A first word that names no command of ctl's may be a pack's binding: `ctl dolt list`.
    if (err instanceof UnknownCommand && err.path.length === 0) {
      const { runPackCommand } = await import('./commands/pack-run.js');
      try {
        if (await runPackCommand(words)) return;
      } catch (ran) {
        process.stderr.write(`ctl ${packWords(words)}: ${messageOf(ran, flags)}\n`);
        process.exitCode = 1;
        return;
      }
    }
    if (err instanceof UnknownCommand) path = err.path;
    process.stderr.write(`${path.length ? `ctl ${path.join(' ')}` : 'ctl'}: ${messageOf(err, flags)}\n`);
    process.exitCode = 1;
  }
}

await main();
