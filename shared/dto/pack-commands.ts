/** A command a pack offers: `ctl <binding> <command…> [args…]`. */
export interface PackCommandResponse {
  /** What it is run under: the namespace of the pack's agents (`dolt`, `bd` when bd re-exports dolt). */
  binding: string;
  /** Its words, joined by spaces (`sql`, `repo sync`). */
  command: string;
  words: string[];
  description?: string;
  /** The import it comes from (its binding path: `bd.dolt`). */
  pack: string;
  /** Its script, relative to the pack's directory. */
  script: string;
  /** Its help text (`help.md`, or `long_description`), when it has one. */
  help?: string;
}

/** Body of `GET /v0/city/{cityName}/commands`. */
export interface PackCommandListBody {
  items: PackCommandResponse[];
  total: number;
  /** More follow: pass it as `cursor`. */
  next_cursor?: string;
}

/** Body of `POST /v0/city/{cityName}/commands/run`. */
export interface PackCommandRunInputBody {
  /** The binding the command is offered under. */
  binding: string;
  /**
   * The command's words followed by its arguments (`["sql", "select 1"]`): the longest run of leading words
   * naming one of the binding's commands picks it; the rest are its arguments.
   * @maxItems 256
   */
  argv: string[];
  /**
   * How long it may run before it is killed, with every process it started (a duration: `30s`, `5m`; default
   * `2m`, at most `30m`).
   */
  timeout?: string;
}

/** Body of the answer to `POST /v0/city/{cityName}/commands/run`: what the command did. */
export interface PackCommandRunResponse {
  binding: string;
  command: string;
  /** The arguments it was given. */
  args: string[];
  /** Its exit status; null when it was killed (its time-out) or could not start. */
  exit_code: number | null;
  signal?: string;
  /** Its stdout and stderr, interleaved as they came (the last 1 MiB). */
  output: string;
  timed_out: boolean;
  duration_ms: number;
  /** Why it could not start. */
  error?: string;
}
