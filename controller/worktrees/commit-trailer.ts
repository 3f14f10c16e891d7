/** The trailer a pushed commit carries: the bead it was done for (`Ctl-Bead: gc-12`). */
export const BEAD_TRAILER = 'Ctl-Bead';

/** A line of a trailer block: `Key: value` (git's token characters), or a continuation of the one before. */
const TRAILER_LINE = /^[A-Za-z0-9][A-Za-z0-9-]*:\s/;
const CONTINUATION = /^[ \t]+\S/;

/**
 * The lines of a commit message's trailer block, as git reads one: its last paragraph, when that is not the
 * subject and every line of it is a trailer or continues one. None: the message has no trailers.
 */
function trailerBlock(message: string): string[] {
  const paragraphs = message
    .replace(/\s+$/, '')
    .split(/\n[ \t]*\n/)
    .filter((p) => p.trim() !== '');
  if (paragraphs.length < 2) return [];
  const lines = paragraphs[paragraphs.length - 1]!.split('\n');
  if (!TRAILER_LINE.test(lines[0]!)) return [];
  return lines.every((line) => TRAILER_LINE.test(line) || CONTINUATION.test(line)) ? lines : [];
}

/** The values of trailer `key` (matched as git does, whatever its case) in `message`. */
export function trailerValues(message: string, key: string): string[] {
  const prefix = `${key.toLowerCase()}:`;
  return trailerBlock(message)
    .filter((line) => line.toLowerCase().startsWith(prefix))
    .map((line) => line.slice(prefix.length).trim());
}

/**
 * `message` with `key: value` as its last trailer: added to the trailer block it has, else in a block of its own
 * after a blank line. A message that already has that trailer is returned as it is.
 */
export function withTrailer(message: string, key: string, value: string): string {
  if (trailerValues(message, key).includes(value)) return message;
  const body = message.replace(/\s+$/, '');
  const line = `${key}: ${value}`;
  if (body === '') return `${line}\n`;
  return trailerBlock(body).length > 0 ? `${body}\n${line}\n` : `${body}\n\n${line}\n`;
}
