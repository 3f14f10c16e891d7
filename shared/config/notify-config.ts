import { parseDuration } from '../duration.js';
import { ConfigError } from './config-error.js';

/** What a person can be told about: each one something that waits on them or went wrong while nobody watched. */
export const NOTICE_KINDS = ['permission', 'question', 'run_failed', 'quarantined', 'review'] as const;
export type NoticeKind = (typeof NOTICE_KINDS)[number];

/** `[notify]` of `supervisor.toml`: where notices go, and which. Absent (or neither channel set): none are sent. */
export interface NotifyConfig {
  /** The kinds notified (default: all of them). */
  kinds: NoticeKind[];
  webhook?: {
    url: string;
    headers: Record<string, string>;
    /** Each attempt's bound, connecting and answering. */
    timeoutMs: number;
    /** Attempts after the first, for no answer, a 429 or a 5xx (1 s apart, doubling). */
    retries: number;
    /**
     * `allow_private_networks`: whether the URL may reach this machine's networks — private, link-local,
     * unique-local ranges and loopback (default false; the packs' policy, shared/http/address-policy.ts).
     */
    allowPrivateNetworks: boolean;
  };
  command?: {
    /** A string runs through `/bin/sh -c`; an array is the program and its arguments. */
    argv: string[];
    /** After this long it is stopped (SIGTERM to its process group, SIGKILL 2 s later). */
    timeoutMs: number;
  };
}

const DEFAULT_WEBHOOK_TIMEOUT_MS = 5_000;
const DEFAULT_WEBHOOK_RETRIES = 2;
const MAX_WEBHOOK_RETRIES = 10;
const DEFAULT_COMMAND_TIMEOUT_MS = 10_000;
/** No attempt or command may hold a notice longer than this. */
const MAX_TIMEOUT_MS = 120_000;

/** Reads `[notify]` (a TOML table, already parsed); undefined when no channel is set. */
export function readNotifyConfig(table: unknown, path: string): NotifyConfig | undefined {
  if (table === undefined) return undefined;
  if (typeof table !== 'object' || table === null || Array.isArray(table)) {
    throw new ConfigError(`${path}: notify must be a table`);
  }
  const t = table as Record<string, unknown>;
  const known = new Set([
    'on',
    'webhook',
    'webhook_headers',
    'webhook_timeout',
    'webhook_retries',
    'allow_private_networks',
    'command',
    'command_timeout',
  ]);
  for (const key of Object.keys(t)) {
    if (!known.has(key)) throw new ConfigError(`${path}: notify.${key} is not a setting (${[...known].join(', ')})`);
  }
  const config: NotifyConfig = { kinds: kindsOf(t.on, path) };
  if (t.webhook !== undefined) {
    if (typeof t.webhook !== 'string') throw new ConfigError(`${path}: notify.webhook must be a URL string`);
    let url: URL;
    try {
      url = new URL(t.webhook);
    } catch {
      throw new ConfigError(`${path}: notify.webhook ${JSON.stringify(t.webhook)} is not a URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new ConfigError(`${path}: notify.webhook must be an http or https URL`);
    }
    config.webhook = {
      url: url.toString(),
      headers: headersOf(t.webhook_headers, path),
      timeoutMs: durationOf(t.webhook_timeout, 'webhook_timeout', DEFAULT_WEBHOOK_TIMEOUT_MS, path),
      retries: retriesOf(t.webhook_retries, path),
      allowPrivateNetworks: allowPrivateOf(t.allow_private_networks, path),
    };
  } else if (t.webhook_headers !== undefined || t.webhook_timeout !== undefined || t.webhook_retries !== undefined) {
    throw new ConfigError(`${path}: notify.webhook_* settings need notify.webhook`);
  } else if (t.allow_private_networks !== undefined) {
    throw new ConfigError(`${path}: notify.allow_private_networks needs notify.webhook`);
  }
  if (t.command !== undefined) {
    config.command = {
      argv: argvOf(t.command, path),
      timeoutMs: durationOf(t.command_timeout, 'command_timeout', DEFAULT_COMMAND_TIMEOUT_MS, path),
    };
  } else if (t.command_timeout !== undefined) {
    throw new ConfigError(`${path}: notify.command_timeout needs notify.command`);
  }
  return config.webhook || config.command ? config : undefined;
}

function kindsOf(value: unknown, path: string): NoticeKind[] {
  if (value === undefined) return [...NOTICE_KINDS];
  const wrong = `${path}: notify.on must be an array of ${NOTICE_KINDS.join(', ')}`;
  if (!Array.isArray(value)) throw new ConfigError(wrong);
  for (const kind of value) {
    if (!NOTICE_KINDS.includes(kind as NoticeKind)) {
      throw new ConfigError(`${wrong}; not ${JSON.stringify(kind)}`);
    }
  }
  return [...new Set(value as NoticeKind[])];
}

function headersOf(value: unknown, path: string): Record<string, string> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigError(`${path}: notify.webhook_headers must be a table of strings`);
  }
  const headers: Record<string, string> = {};
  for (const [name, v] of Object.entries(value)) {
    if (typeof v !== 'string' || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name) || /[\r\n]/.test(v)) {
      throw new ConfigError(`${path}: notify.webhook_headers.${name} must be a header name with a one-line string`);
    }
    headers[name] = v;
  }
  return headers;
}

function allowPrivateOf(value: unknown, path: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw new ConfigError(`${path}: notify.allow_private_networks must be true or false`);
  return value;
}

function retriesOf(value: unknown, path: string): number {
  if (value === undefined) return DEFAULT_WEBHOOK_RETRIES;
  const n = typeof value === 'bigint' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > MAX_WEBHOOK_RETRIES) {
    throw new ConfigError(`${path}: notify.webhook_retries must be an integer from 0 to ${MAX_WEBHOOK_RETRIES}`);
  }
  return n;
}

function durationOf(value: unknown, key: string, fallback: number, path: string): number {
  if (value === undefined) return fallback;
  let ms: number;
  try {
    if (typeof value !== 'string') throw new Error('must be a duration string such as "5s"');
    ms = parseDuration(value);
  } catch (err) {
    throw new ConfigError(`${path}: notify.${key}: ${(err as Error).message}`);
  }
  if (ms <= 0 || ms > MAX_TIMEOUT_MS) {
    throw new ConfigError(`${path}: notify.${key} must be more than 0 and at most ${MAX_TIMEOUT_MS / 1000}s`);
  }
  return ms;
}

function argvOf(value: unknown, path: string): string[] {
  if (typeof value === 'string' && value.trim() !== '') return ['/bin/sh', '-c', value];
  if (Array.isArray(value) && value.length > 0 && value.every((w) => typeof w === 'string') && value[0] !== '') {
    return value;
  }
  throw new ConfigError(`${path}: notify.command must be a command line (string) or a non-empty array of strings`);
}
