import { timingSafeEqual, createHash } from 'node:crypto';
import { BlockList, isIP } from 'node:net';

/**
 * A webhook's source allow-list (`verify.allowed_cidrs`), in node's own `BlockList` (a matcher the runtime keeps,
 * IPv4 and IPv6): CIDRs or bare addresses; an IPv4-mapped IPv6 entry is read as the IPv4 one, as the sender's
 * address is. Throws naming the first entry that is neither.
 */
export function parseCidrs(entries: string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const text = entry.trim();
    const slash = text.indexOf('/');
    const address = unmapped(slash < 0 ? text : text.slice(0, slash));
    const family = isIP(address);
    if (family === 0) throw new Error(`"${entry}" is not a CIDR or an IP address`);
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (slash < 0) {
      list.addAddress(address, type);
      continue;
    }
    let bits = Number(text.slice(slash + 1));
    // `::ffff:192.0.2.0/120` is `192.0.2.0/24`.
    if (family === 4 && address !== text.slice(0, slash)) bits -= 96;
    if (!Number.isInteger(bits) || bits < 0 || bits > (family === 4 ? 32 : 128) || text.slice(slash + 1) === '') {
      throw new Error(`"${entry}" has no valid prefix length`);
    }
    list.addSubnet(address, bits, type);
  }
  return list;
}

/**
 * Whether `address` (the sender's, as the supervisor saw its connection — never a header the sender wrote) is in
 * the list. An address that cannot be read is not.
 */
export function sourceAllowed(list: BlockList, address: string | undefined): boolean {
  if (!address) return false;
  const ip = unmapped(address);
  const family = isIP(ip);
  if (family === 0) return false;
  return list.check(ip, family === 4 ? 'ipv4' : 'ipv6');
}

/** Whether `Authorization: Bearer <token>` carries `expected`, compared in constant time (of their digests). */
export function bearerMatches(authorization: string | undefined, expected: string): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  if (!match) return false;
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(match[1]!), digest(expected.trim()));
}

function unmapped(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address.replace(/^\[|\]$/g, ''));
  return mapped ? mapped[1]! : address.replace(/^\[|\]$/g, '');
}
