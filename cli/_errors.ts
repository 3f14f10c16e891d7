import type { ErrorDetail } from '../shared/dto/errors.js';

/** A failure the user should read: printed as one line, `ctl <command>: <message>`, with exit status 1. */
export class CliError extends Error {}

/** Words that name no command; `path` names the group they were looked for in. */
export class UnknownCommand extends CliError {
  constructor(
    message: string,
    readonly path: string[],
  ) {
    super(message);
  }
}

/** The API did not connect or answer in time: something is there, but not working. */
export class NoAnswer extends CliError {}

/**
 * The API answered with a problem. The message is its `detail`; `errors` (validation failures) name the request
 * fields, which `main.ts` turns back into the flags that carried them (`body.title` → `--title`).
 */
export class ApiProblem extends CliError {
  constructor(
    message: string,
    readonly status: number,
    readonly errors: ErrorDetail[] = [],
  ) {
    super(message);
  }
}
