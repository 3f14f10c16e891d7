import type { CommandDef, ParsedArgs, SubCommandsDef } from 'citty';
import { parseWords } from './_args.js';
import type { AnyCommand, CommandSpec, CtlMeta, Flags } from './_types.js';

/**
 * A command: its words are read by `parseWords` (every flag declared, values required, repeatable flags kept
 * whole), then `run` gets them. `examples` are shown in `--help`. `main.ts` runs it with the words after its
 * name, global flags included.
 */
export function command<const T extends Flags>(spec: CommandSpec<T>): CommandDef<T> {
  const meta: CtlMeta = { name: spec.name, description: spec.description, examples: spec.examples };
  return {
    meta,
    args: spec.args,
    async run({ rawArgs }) {
      const { args, values, rest } = parseWords(rawArgs, spec.args, { variadic: spec.variadic });
      await spec.run({ args: args as unknown as ParsedArgs<T>, all: (name) => values.get(name) ?? [], rest });
    },
  };
}

/** A group of commands (`ctl bead …`): alone, or with `--help`, it shows its usage. */
export function group(spec: {
  name: string;
  description: string;
  examples: string[];
  commands: SubCommandsDef;
}): AnyCommand {
  const meta: CtlMeta = { name: spec.name, description: spec.description, examples: spec.examples };
  return { meta, subCommands: spec.commands };
}

/** A command whose own `run` also has subcommands (`ctl events`, `ctl events rotate`). */
export function withCommands<T extends Flags>(parent: CommandDef<T>, commands: SubCommandsDef): CommandDef<T> {
  return { ...parent, subCommands: commands };
}
