import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';

/**
 * Which addresses a connection ctl makes on its own (a pack's fetch, a notice's webhook) may reach. The machine's
 * networks are off limits unless allowed: private, link-local (cloud metadata), carrier-grade NAT, unique-local
 * and unspecified ranges — and, where `loopbackPrivate`, this machine's own services too.
 */
export interface AddressPolicy {
  /** The ranges above allowed after all (`allow_private_networks = true`). */
  allowPrivateNetworks: boolean;
  /** Whether 127.0.0.0/8 and ::1 count as private (a notice's webhook) or as this machine's own (packs). */
  loopbackPrivate?: boolean;
}

export class AddressRefused extends Error {}

/** Why an address is off limits (a private, link-local, unique-local or unspecified range), or undefined. */
export function forbiddenRange(address: string, o: { loopbackPrivate?: boolean } = {}): string | undefined {
  const v4 = /^(?:::ffff:)?(\d+)\.(\d+)\.(\d+)\.(\d+)$/i.exec(address);
  if (v4) {
    const [a, b] = [Number(v4[1]), Number(v4[2])];
    if (a === 127) return o.loopbackPrivate ? 'loopback (this machine)' : undefined;
    if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) return 'in a private range';
    if (a === 169 && b === 254) return 'link-local (cloud metadata lives there)';
    if (a === 100 && b >= 64 && b <= 127) return 'in the carrier-grade NAT range';
    if (a === 0) return 'unspecified';
    return undefined;
  }
  const lower = address.toLowerCase();
  if (lower === '::1') return o.loopbackPrivate ? 'loopback (this machine)' : undefined;
  if (lower === '::') return 'unspecified';
  if (/^f[cd]/.test(lower)) return 'unique-local';
  if (/^fe[89ab]/.test(lower)) return 'link-local';
  return undefined;
}

/** Refuses `host` when an address it resolves to is off limits under `policy`, saying which and why. */
export async function checkHostAllowed(host: string, policy: AddressPolicy, what: string): Promise<void> {
  if (policy.allowPrivateNetworks) return;
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  let addresses: string[];
  try {
    addresses = isIP(bare) ? [bare] : (await lookup(bare, { all: true, verbatim: true })).map((a) => a.address);
  } catch (err) {
    throw new AddressRefused(`cannot resolve ${host}: ${(err as NodeJS.ErrnoException).code ?? 'lookup failed'}`);
  }
  for (const address of addresses) refuseIfForbidden(host, address, policy, what);
}

/**
 * A `lookup` for a connection (node:net, undici's `connect`) that refuses an address off limits under `policy`:
 * the check made on the address connected to, so a name that resolved to a public address when checked cannot
 * resolve to a private one when connecting (DNS rebinding).
 */
export function guardedLookup(policy: AddressPolicy, what: string): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, found: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      try {
        if (!policy.allowPrivateNetworks) for (const a of found) refuseIfForbidden(hostname, a.address, policy, what);
      } catch (refused) {
        return callback(refused as NodeJS.ErrnoException, '', 0);
      }
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, found);
      callback(null, found[0]!.address, found[0]!.family);
    });
  };
}

function refuseIfForbidden(host: string, address: string, policy: AddressPolicy, what: string): void {
  const why = forbiddenRange(address, policy);
  if (why) throw new AddressRefused(`${host} is ${address}, ${why}: ${what} there are not allowed`);
}
