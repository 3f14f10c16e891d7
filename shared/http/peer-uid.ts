import { open, type FileHandle } from 'node:fs/promises';
import { endianness } from 'node:os';
import { isIPv4, isIPv6 } from 'node:net';

/** The two ends of a TCP connection as the server sees it. */
export interface ConnectionEnds {
  localAddress: string;
  localPort: number;
  remoteAddress: string;
  remotePort: number;
}

const LITTLE_ENDIAN = endianness() === 'LE';
const TIME_WAIT = '06';

/**
 * The uid owning the client's end of a TCP connection on this machine, as identd and `ss -e` read it: the
 * kernel lists every socket of this network namespace in /proc/net/tcp (IPv4) and /proc/net/tcp6 with its
 * addresses and owner. The client's socket is the one whose local end is our remote and whose remote end is our
 * local. Throws when no such socket is listed (the client is on another machine or already gone): a caller
 * refuses then, never guesses.
 *
 * A few wanted address pairs are searched for in the text, many are matched line by line against a set, and the
 * files are read only as far as needed. Lookups that come while a table is being read share its next read (TableReads): producing the table is
 * what costs (the kernel walks its whole connection hash, 10–50 ms on a busy 2-core machine), and a burst of new
 * connections — a client opening a pool's sockets at once — otherwise paid it once each, one after the other.
 * (The kernel's netlink sock_diag interface can look one connection up directly, without walking the table, but
 * Node has no netlink sockets; a native addon would be the next step if new connections must get cheaper.)
 */
export async function peerUid(ends: ConnectionEnds): Promise<number> {
  const remote = parseAddress(ends.remoteAddress);
  const local = parseAddress(ends.localAddress);
  if (!remote || !local) throw new Error(`cannot identify the peer of ${ends.remoteAddress}: not an IP address`);
  // An IPv4 client of an IPv6 socket shows here as ::ffff:a.b.c.d; its own socket may be IPv4 (listed in tcp) or
  // an IPv6 one speaking to a mapped address (listed in tcp6).
  const candidates: { file: string; needle: string }[] = [];
  if (remote.v4 && local.v4) {
    candidates.push({
      file: '/proc/net/tcp',
      needle: pair(v4Hex(remote.v4), ends.remotePort, v4Hex(local.v4), ends.localPort),
    });
  }
  candidates.push({
    file: '/proc/net/tcp6',
    needle: pair(v6Hex(remote.bytes), ends.remotePort, v6Hex(local.bytes), ends.localPort),
  });
  for (const { file, needle } of candidates) {
    const uid = await tableReads(file).uidOf(needle);
    if (uid !== undefined) return uid;
  }
  throw new Error(`cannot identify the peer ${ends.remoteAddress}:${ends.remotePort}: no local socket owns it`);
}

/** How much of a socket table one read asks for: the kernel fills it with whole lines. */
const CHUNK = 64 * 1024;

/** A lookup waiting for a read of its table. */
interface Waiter {
  resolve: (uid: number | undefined) => void;
  reject: (err: unknown) => void;
}

/**
 * The reads of one socket table, shared: a lookup waits for the next read to start (never joins one under way,
 * which may have passed its socket's place in the table already), and each read answers every lookup that
 * waited for it.
 */
class TableReads {
  private waiting = new Map<string, Waiter[]>();
  private reading = false;

  constructor(private readonly file: string) {}

  uidOf(needle: string): Promise<number | undefined> {
    return new Promise((resolve, reject) => {
      const waiters = this.waiting.get(needle) ?? [];
      waiters.push({ resolve, reject });
      this.waiting.set(needle, waiters);
      this.readNext();
    });
  }

  private readNext(): void {
    if (this.reading || this.waiting.size === 0) return;
    this.reading = true;
    const batch = this.waiting;
    this.waiting = new Map();
    findUids(this.file, [...batch.keys()])
      .then(
        (found) => {
          for (const [needle, waiters] of batch) for (const w of waiters) w.resolve(found.get(needle));
        },
        (err: unknown) => {
          for (const waiters of batch.values()) for (const w of waiters) w.reject(err);
        },
      )
      .finally(() => {
        this.reading = false;
        this.readNext();
      });
  }
}

const tables = new Map<string, TableReads>();
let tableReadsMade = 0;

/** How many times this process has read a socket table (what the sharing of reads saves; for tests). */
export function socketTableReads(): number {
  return tableReadsMade;
}

function tableReads(file: string): TableReads {
  let reads = tables.get(file);
  if (!reads) tables.set(file, (reads = new TableReads(file)));
  return reads;
}

/**
 * The uid on the first live line holding each needle, reading the table only until every needle is found.
 * Producing the table is the cost (the kernel walks every bucket of its connection hash for it), so stopping at
 * the last line wanted saves part of it.
 */
async function findUids(file: string, needles: string[]): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  const wanted = new Set(needles);
  tableReadsMade++;
  let handle: FileHandle;
  try {
    handle = await open(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return found;
    throw err;
  }
  try {
    const buffer = Buffer.allocUnsafe(CHUNK);
    let carried = '';
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, CHUNK, null);
      const done = bytesRead === 0;
      const text = carried + buffer.toString('latin1', 0, bytesRead);
      // Whole lines only; the unfinished last one waits for the next read.
      const lastLine = done ? text.length : text.lastIndexOf('\n') + 1;
      const lines = text.slice(0, lastLine);
      carried = text.slice(lastLine);
      collectUids(lines, needles, wanted, found);
      if (done || found.size === needles.length) return found;
    }
  } finally {
    await handle.close();
  }
}

/** Up to this many needles not yet found, each is searched for in the text (a native search, fast for a few). */
const SEARCH_EACH_UP_TO = 32;

/**
 * Adds the uid of each needle's first live line in `lines` (whole lines) to `found`. A few needles are searched for
 * in the text; more, and each line is looked at once instead, its address pair looked up among the wanted: a burst
 * of new connections brings hundreds of needles to a table of thousands of lines, and a search per needle grew
 * with both (500 lookups at once beside 3,000 sockets took twice as long).
 */
function collectUids(lines: string, needles: string[], wanted: Set<string>, found: Map<string, number>): void {
  if (needles.length - found.size <= SEARCH_EACH_UP_TO) {
    for (const needle of needles) {
      if (found.has(needle)) continue;
      for (let at = lines.indexOf(needle); at >= 0; at = lines.indexOf(needle, at + needle.length)) {
        const end = lines.indexOf('\n', at);
        const uid = uidOnLine(lines.slice(at, end < 0 ? undefined : end));
        if (uid !== undefined) {
          found.set(needle, uid);
          break;
        }
      }
    }
    return;
  }
  for (let start = 0; start < lines.length;) {
    const newline = lines.indexOf('\n', start);
    const end = newline < 0 ? lines.length : newline;
    const line = lines.slice(start, end);
    start = end + 1;
    const key = addressPairOf(line);
    if (key === undefined || !wanted.has(key) || found.has(key)) continue;
    const uid = uidOnLine(line.slice(line.indexOf(':') + 1));
    if (uid !== undefined) found.set(key, uid);
  }
}

const ADDRESS_PAIR = /^\s*\d+: (\S+) (\S+) /;

/** The ` local rem ` of a table line (`sl: local rem st …`), spaced as `pair` makes needles; none for the header. */
function addressPairOf(line: string): string | undefined {
  const match = ADDRESS_PAIR.exec(line);
  return match ? ` ${match[1]} ${match[2]} ` : undefined;
}

/** The uid of `local rem st tx:rx tr:when retrnsmt uid timeout inode`, unless the line is a TIME_WAIT ghost. */
function uidOnLine(line: string): number | undefined {
  const [, , state, , , , uid, , inode] = line.trim().split(/\s+/);
  // A TIME_WAIT entry (uid 0, inode 0) is an earlier connection's ghost, not the live client.
  if (state === TIME_WAIT || inode === '0' || uid === undefined || !/^\d+$/.test(uid)) return undefined;
  return Number(uid);
}

/** ` LLLL:PPPP RRRR:PPPP ` as the kernel prints a socket's local then remote end. */
function pair(localHex: string, localPort: number, remoteHex: string, remotePort: number): string {
  return ` ${localHex}:${portHex(localPort)} ${remoteHex}:${portHex(remotePort)} `;
}

function portHex(port: number): string {
  return port.toString(16).toUpperCase().padStart(4, '0');
}

interface ParsedAddress {
  /** The IPv4 address's four bytes, for an IPv4 address or an IPv4-mapped IPv6 one. */
  v4: number[] | undefined;
  /** The sixteen bytes of the address as IPv6 (an IPv4 one mapped). */
  bytes: number[];
}

export function parseAddress(address: string): ParsedAddress | undefined {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  const v4text = isIPv4(address) ? address : mapped?.[1];
  if (v4text !== undefined) {
    const v4 = v4text.split('.').map(Number);
    return { v4, bytes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, ...v4] };
  }
  if (!isIPv6(address)) return undefined;
  const bytes = ipv6Bytes(address.split('%')[0]!);
  return bytes ? { v4: undefined, bytes } : undefined;
}

function ipv6Bytes(address: string): number[] | undefined {
  const halves = address.split('::');
  if (halves.length > 2) return undefined;
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
  const missing = 8 - head.length - tail.length;
  if (missing < 0 || (halves.length === 1 && missing !== 0)) return undefined;
  const words = [...head, ...Array<string>(missing).fill('0'), ...tail].map((g) => parseInt(g, 16));
  if (words.some((w) => !(w >= 0 && w <= 0xffff))) return undefined;
  return words.flatMap((w) => [w >> 8, w & 0xff]);
}

/** The kernel prints an address as 32-bit words in the machine's byte order, each as `%08X`. */
function wordHex(b: number[]): string {
  const ordered = LITTLE_ENDIAN ? [b[3]!, b[2]!, b[1]!, b[0]!] : b;
  return ordered.map((x) => x.toString(16).toUpperCase().padStart(2, '0')).join('');
}

export function v4Hex(bytes: number[]): string {
  return wordHex(bytes);
}

export function v6Hex(bytes: number[]): string {
  let out = '';
  for (let i = 0; i < 16; i += 4) out += wordHex(bytes.slice(i, i + 4));
  return out;
}
