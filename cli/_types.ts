// The types the CLI's helpers and commands share, in one place.

import type { ArgDef, CommandDef, CommandMeta, ParsedArgs } from 'citty';
import type { ApiClient } from '../shared/api-client.js';
import type { FetchLimits } from '../shared/timed-fetch.js';

/** A connection to the supervisor's API (`_api.ts`). */
export interface Api {
  base: string;
  client: ApiClient;
  limits: Required<FetchLimits>;
  /** For event streams: bounded in how long they take to connect, never in how long they run. */
  streamFetch: typeof fetch;
}

/** What a call of the typed client resolves to. */
export interface FetchResult<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** A flag or positional argument: citty's definition, and what ctl adds to it. */
export type Flag = ArgDef & {
  /**
   * The request field the flag carries, when that is not its own name (`--label` fills `labels`): a 422 about
   * that field then names the flag. Compared without `-`, `_` or case.
   */
  field?: string;
  /** Given more than once, every value counts (`ctx.all(name)`); otherwise the last one does. */
  repeatable?: boolean;
  /** A flag taking a value that `--no-<name>` clears (`--no-parent`): its value is then `false`. */
  negatable?: boolean;
  /** What its value names, for shell completion to offer from the running supervisor (`ctl completion names`). */
  complete?: NameKind;
};

/** The things shell completion offers by name. */
export type NameKind = 'cities' | 'agents' | 'sessions' | 'beads' | 'formulas' | 'hosts';

export type Flags = Record<string, Flag>;

/** What a command's `run` gets: the parsed flags and positionals, and every value of a repeatable flag. */
export interface RunContext<T extends Flags> {
  args: ParsedArgs<T>;
  /** Every value of a repeatable flag, in order. */
  all: (name: keyof T & string) => string[];
  /** The words after the declared positionals, for a command whose last positional takes them all. */
  rest: string[];
}

/** A command as ctl defines it (`command()` in `_command.ts`). */
export interface CommandSpec<T extends Flags> {
  name: string;
  description: string;
  /** Shown under EXAMPLES in `--help`: command lines, each optionally followed by `  # what it does`. */
  examples: string[];
  args: T;
  /** The last positional takes every remaining word (`ctl convoy add ID ITEM…`). */
  variadic?: boolean;
  run(context: RunContext<T>): Promise<void> | void;
}

/** citty's command metadata, with the examples `--help` shows. */
export interface CtlMeta extends CommandMeta {
  name: string;
  description: string;
  examples: string[];
}

/** A command of the tree, leaf or group, as citty runs and describes it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any command's flags
export type AnyCommand = CommandDef<any>;

/** A table column (`table()` in `_output.ts`). */
export interface Column<R> {
  header: string;
  value(row: R): string | number | undefined | null;
  /**
   * `id`: names the row (ids, names), never cut; `text`: free text (titles, paths, errors), cut to fit a terminal;
   * `status`: a state word, coloured on a terminal. Anything else is shown as it is.
   */
  kind?: 'id' | 'text' | 'status';
}
