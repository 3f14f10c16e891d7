/** Progress for people: written to stderr only when it is a terminal, so scripts see data or one error. */
export function progress(line: string): void {
  if (process.stderr.isTTY) process.stderr.write(`${line}\n`);
}
