// The contract between `ctl` and the two long-running programs it starts in-process. The CLI validates
// flags and calls `run(options)` on the program's entry module; it imports nothing else from them.

export interface SupervisorRunOptions {
  /** Overrides `[supervisor] bind`. */
  host?: string;
  /** Overrides `[supervisor] port`. */
  port?: number;
}

export interface ControllerRunOptions {
  /** City directory (holding city.toml). */
  city: string;
  /** Name to serve the city under; defaults to `[workspace] name`, else the directory name. */
  name?: string;
  /** A Unix socket path or a TCP port on 127.0.0.1; defaults to `<city>/.ctl/controller.sock`. */
  listen?: string;
}

export interface ProgramEntry<Options> {
  run(options: Options): Promise<void>;
}
