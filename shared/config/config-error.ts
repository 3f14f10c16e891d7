/** Where in a file a ConfigError is: 1-based line and column, and that line with a caret under the column. */
export interface ConfigErrorPlace {
  line: number;
  column: number;
  excerpt: string;
}

/** A configuration file that cannot be used; the message names the file and the key (or line and column). */
export class ConfigError extends Error {
  constructor(
    message: string,
    readonly place?: ConfigErrorPlace,
  ) {
    super(message);
  }
}
