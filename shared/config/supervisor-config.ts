import { readFileSync } from 'node:fs';
import { parseDuration } from '../duration.js';
import { ConfigError } from './config-error.js';
import { readNotifyConfig, type NotifyConfig } from './notify-config.js';
import { parseToml } from './toml-syntax.js';

export const DEFAULT_BIND = '127.0.0.1';
export const DEFAULT_PORT = 8372;

/** `$CTL_HOME/supervisor.toml`, `[supervisor]` table; a missing file means every default. */
export interface SupervisorConfig {
  bind: string;
  port: number;
  allowMutations: boolean;
  allowedHosts: string[];
  allowedOrigins: string[];
  /** Local accounts besides the supervisor's own that may use the API without a token. */
  allowUsers: string[];
  /** Local groups whose members (primary or supplementary) may use the API without a token. */
  allowGroups: string[];
  /** Period of the reconciler's periodic pass. */
  patrolIntervalMs: number;
  /** Interval between SSE heartbeat frames. */
  sseHeartbeatMs: number;
  /** `[packs]`: where cities may fetch packs from (their controllers read it when a pack is added). */
  packs: {
    allowFile: boolean;
    allowPrivateNetworks: boolean;
    allowedHosts: string[];
  };
  /** `[notify]`: notices for a person (a webhook, a command); undefined when none is set up. */
  notify?: NotifyConfig;
  /**
   * `[webhooks] listen`: where inbound webhook deliveries are served (`POST /hooks/{city}/{name}`, nothing of the
   * control plane), apart from the API; undefined (the default) serves none.
   */
  webhooksListen?: { host: string; port: number };
}

export function readSupervisorConfig(path: string, env: NodeJS.ProcessEnv = process.env): SupervisorConfig {
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const doc = parseToml(text, path);
  const table = (doc.supervisor ?? {}) as Record<string, unknown>;
  const packs = (doc.packs ?? {}) as Record<string, unknown>;
  const webhooks = (doc.webhooks ?? {}) as Record<string, unknown>;
  const heartbeatEnv = env.CTL_SSE_HEARTBEAT_MS;
  return {
    bind: stringOr(table, 'bind', DEFAULT_BIND, path),
    port: intOr(table, 'port', DEFAULT_PORT, path),
    allowMutations: boolOr(table, 'allow_mutations', false, path),
    allowedHosts: stringsOr(table, 'allowed_hosts', path),
    allowedOrigins: stringsOr(table, 'allowed_origins', path),
    allowUsers: stringsOr(table, 'allow_users', path),
    allowGroups: stringsOr(table, 'allow_groups', path),
    patrolIntervalMs: durationOr(table, 'patrol_interval', 10_000, path),
    sseHeartbeatMs: heartbeatEnv ? Number(heartbeatEnv) : intOr(table, 'sse_heartbeat_ms', 15_000, path),
    packs: {
      allowFile: boolOr(packs, 'allow_file_sources', true, path, 'packs'),
      allowPrivateNetworks: boolOr(packs, 'allow_private_networks', false, path, 'packs'),
      allowedHosts: stringsOr(packs, 'allowed_hosts', path, 'packs'),
    },
    notify: readNotifyConfig(doc.notify, path),
    ...(webhooks.listen !== undefined ? { webhooksListen: listenAddress(webhooks.listen, path) } : {}),
  };
}

/** `host:port` (`[::1]:8373` for IPv6): where `[webhooks] listen` binds. */
function listenAddress(value: unknown, path: string): { host: string; port: number } {
  const match = typeof value === 'string' ? /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s]+)):(\d{1,5})$/.exec(value) : null;
  const port = match ? Number(match[3]) : NaN;
  if (!match || port > 65_535) {
    throw new ConfigError(
      `${path}: webhooks.listen must be "host:port", such as "127.0.0.1:8373"; not ${JSON.stringify(value)}`,
    );
  }
  return { host: match[1] ?? match[2]!, port };
}

function stringOr(t: Record<string, unknown>, key: string, fallback: string, path: string): string {
  const v = t[key];
  if (v === undefined) return fallback;
  if (typeof v !== 'string' || v.trim() === '') throw new ConfigError(`${path}: supervisor.${key} must be a string`);
  return v;
}

function intOr(t: Record<string, unknown>, key: string, fallback: number, path: string): number {
  const v = t[key];
  if (v === undefined) return fallback;
  const n = typeof v === 'bigint' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) {
    throw new ConfigError(`${path}: supervisor.${key} must be a non-negative integer`);
  }
  return n;
}

function boolOr(
  t: Record<string, unknown>,
  key: string,
  fallback: boolean,
  path: string,
  section = 'supervisor',
): boolean {
  const v = t[key];
  if (v === undefined) return fallback;
  if (typeof v !== 'boolean') throw new ConfigError(`${path}: ${section}.${key} must be true or false`);
  return v;
}

function stringsOr(t: Record<string, unknown>, key: string, path: string, section = 'supervisor'): string[] {
  const v = t[key];
  if (v === undefined) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
    throw new ConfigError(`${path}: ${section}.${key} must be an array of strings`);
  }
  return v as string[];
}

function durationOr(t: Record<string, unknown>, key: string, fallback: number, path: string): number {
  const v = t[key];
  if (v === undefined) return fallback;
  try {
    if (typeof v !== 'string') throw new Error('must be a duration string such as "10s"');
    const ms = parseDuration(v);
    if (ms <= 0) throw new Error('must be positive');
    return ms;
  } catch (err) {
    throw new ConfigError(`${path}: supervisor.${key}: ${(err as Error).message}`);
  }
}
