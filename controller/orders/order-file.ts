import { Cron } from 'croner';
import { parse } from 'smol-toml';
import { tomlSyntaxError } from '../../shared/config/toml-syntax.js';
import { formatDuration, parseDuration } from '../../shared/duration.js';
import { nearest } from '../config-schema/key-audit.js';

export const TRIGGERS = ['cooldown', 'cron', 'condition', 'event', 'manual', 'webhook'] as const;
export type Trigger = (typeof TRIGGERS)[number];

const DEFAULT_EXEC_TIMEOUT_MS = 300_000;
const DEFAULT_FORMULA_TIMEOUT_MS = 30_000;
const DEFAULT_CHECK_TIMEOUT_MS = 10_000;

/** One order, as its file (and any override in `city.toml`) defines it. */
export interface OrderDef {
  name: string;
  /**
   * Its identity among the city's orders: `name`, or `name:rig:<rig>` for the instance a rig's pack brings in
   * (one per importing rig); cooldowns, open-work gates, history and webhooks are keyed by it.
   */
  scopedName: string;
  /** `rig` (default): a rig-imported pack's order runs once per rig; `city`: once, for the city. */
  scope: 'rig' | 'city';
  /** The rig this instance runs for, and its directory (its commands run there). */
  rig?: string;
  rigDir?: string;
  /** The pack binding it came through (`review`), when a pack brought it. */
  binding?: string;
  /** Relative to the city. */
  file: string;
  description?: string;
  trigger: Trigger;
  intervalMs?: number;
  interval?: string;
  schedule?: string;
  tz?: string;
  check?: string;
  checkTimeoutMs: number;
  on?: string;
  exec?: string;
  formula?: string;
  pool?: string;
  vars: Record<string, string>;
  timeoutMs: number;
  enabled: boolean;
  idempotent: boolean;
  noWorkGate: boolean;
  captureOutput: boolean;
  env: Record<string, string>;
  /** Webhook params a run must supply. */
  requiredParams: string[];
  /**
   * Older names of the order (`skip_aliases`): an `[orders] skip` naming one skips it too, so a city that skipped
   * the order under its old name keeps it skipped after the order was renamed.
   */
  skipAliases: string[];
  /** A webhook order: the environment variable holding the secret its deliveries are signed with. */
  secretEnv?: string;
  /** The header carrying a delivery's HMAC-SHA256 signature (default `X-Hub-Signature-256`, as GitHub sends). */
  signatureHeader?: string;
}

export const DEFAULT_SIGNATURE_HEADER = 'X-Hub-Signature-256';

const KEYS = new Set([
  'description',
  'trigger',
  'gate',
  'interval',
  'schedule',
  'tz',
  'check',
  'check_timeout',
  'on',
  'exec',
  'formula',
  'pool',
  'vars',
  'timeout',
  'enabled',
  'idempotent',
  'no_work_gate',
  'capture_output',
  'env',
  'params',
  'scope',
  'skip_aliases',
  'secret_env',
  'signature_header',
]);

/**
 * Reads an order's `[order]` table (`orders/<name>.toml`), with `overrides` (from `city.toml`) laid over it.
 * Throws one message naming the file and every key at fault.
 */
export function parseOrder(
  text: string,
  file: string,
  name: string,
  overrides: Record<string, unknown> = {},
): OrderDef {
  let doc: Record<string, unknown>;
  try {
    doc = parse(text);
  } catch (err) {
    throw new Error(tomlSyntaxError(err, text, file).message, { cause: err });
  }
  const table = doc.order;
  if (typeof table !== 'object' || table === null || Array.isArray(table)) {
    throw new Error(`${file}: an order is an [order] table`);
  }
  const t = { ...(table as Record<string, unknown>), ...overrides };
  const errors: string[] = [];
  const at = (key: string, message: string) => errors.push(`order.${key}: ${message}`);
  for (const key of Object.keys(t)) {
    if (KEYS.has(key)) continue;
    const near = nearest(key, [...KEYS]);
    at(key, `unknown key${near ? ` — did you mean \`${near}\`?` : ''}`);
  }
  const str = (key: string): string | undefined => {
    const v = t[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'string') {
      at(key, 'must be a string');
      return undefined;
    }
    return v;
  };
  const bool = (key: string): boolean | undefined => {
    const v = t[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'boolean') {
      at(key, 'must be true or false');
      return undefined;
    }
    return v;
  };
  const duration = (key: string): number | undefined => {
    const text = str(key);
    if (text === undefined) return undefined;
    try {
      return parseDuration(text);
    } catch {
      at(key, `must be a duration such as 30s, 5m or 1h (got ${JSON.stringify(text)})`);
      return undefined;
    }
  };
  const stringTable = (key: string): Record<string, string> => {
    const v = t[key];
    if (v === undefined) return {};
    if (
      typeof v !== 'object' ||
      v === null ||
      Array.isArray(v) ||
      Object.values(v).some((x) => typeof x !== 'string')
    ) {
      at(key, 'must be a table of strings');
      return {};
    }
    return v as Record<string, string>;
  };

  const stringList = (key: string): string[] => {
    const v = t[key];
    if (v === undefined) return [];
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string' || x === '')) {
      at(key, 'must be a list of order names');
      return [];
    }
    return v as string[];
  };

  const trigger = (str('trigger') ?? str('gate')) as Trigger | undefined;
  if (trigger === undefined) at('trigger', `is required (${TRIGGERS.join(', ')})`);
  else if (!TRIGGERS.includes(trigger)) at('trigger', `must be one of ${TRIGGERS.join(', ')}`);
  const exec = str('exec');
  const formula = str('formula');
  if ((exec === undefined) === (formula === undefined))
    at(exec ? 'formula' : 'exec', 'an order has exec or formula (one of them)');
  const pool = str('pool');
  if (pool !== undefined && exec !== undefined) at('pool', 'is for formula orders (exec runs in the controller)');
  const def: OrderDef = {
    name,
    file,
    description: str('description'),
    trigger: trigger ?? 'manual',
    checkTimeoutMs: duration('check_timeout') ?? DEFAULT_CHECK_TIMEOUT_MS,
    exec,
    formula,
    pool,
    vars: stringTable('vars'),
    timeoutMs: duration('timeout') ?? (formula ? DEFAULT_FORMULA_TIMEOUT_MS : DEFAULT_EXEC_TIMEOUT_MS),
    enabled: bool('enabled') ?? true,
    idempotent: bool('idempotent') ?? false,
    noWorkGate: bool('no_work_gate') ?? false,
    captureOutput: bool('capture_output') ?? true,
    env: stringTable('env'),
    requiredParams: [],
    skipAliases: stringList('skip_aliases'),
    scopedName: name,
    scope: 'rig',
  };
  const scope = str('scope');
  if (scope !== undefined && scope !== 'rig' && scope !== 'city') at('scope', 'must be rig or city');
  else if (scope !== undefined) def.scope = scope;
  if (trigger === 'cooldown') {
    def.intervalMs = duration('interval');
    def.interval = str('interval');
    if (def.intervalMs === undefined && t.interval === undefined)
      at('interval', 'a cooldown order needs an interval (1h, 30m)');
    else if (def.intervalMs !== undefined && def.intervalMs <= 0) at('interval', 'must be more than 0');
  }
  if (trigger === 'cron') {
    def.schedule = str('schedule');
    def.tz = str('tz');
    if (!def.schedule) at('schedule', 'a cron order needs a schedule (five fields: minute hour day month weekday)');
    else if (def.schedule.trim().split(/\s+/).length !== 5)
      at('schedule', `must have five fields (got ${JSON.stringify(def.schedule)})`);
    else {
      try {
        new Cron(def.schedule, { timezone: def.tz, paused: true });
      } catch (err) {
        at(def.tz && /time ?zone/i.test((err as Error).message) ? 'tz' : 'schedule', (err as Error).message);
      }
    }
  }
  if (trigger === 'condition') {
    // How often its check runs (default: the city's patrol interval).
    def.intervalMs = duration('interval');
    def.interval = str('interval');
    def.check = str('check');
    if (!def.check) at('check', 'a condition order needs a check command (exit 0 = due)');
  }
  if (trigger === 'event') {
    def.on = str('on');
    if (!def.on) at('on', 'an event order needs the event type it fires on');
  }
  for (const key of ['secret_env', 'signature_header'] as const) {
    if (t[key] !== undefined && trigger !== 'webhook') at(key, 'is for webhook orders (trigger = "webhook")');
  }
  if (trigger === 'webhook') {
    def.secretEnv = str('secret_env');
    def.signatureHeader = str('signature_header');
    if (def.secretEnv !== undefined && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(def.secretEnv))
      at('secret_env', 'must be an environment variable name (the secret itself never goes in a file)');
    if (def.signatureHeader !== undefined && !/^[A-Za-z0-9-]+$/.test(def.signatureHeader))
      at('signature_header', 'must be a header name');
  }
  if (trigger === 'webhook' && t.params !== undefined) {
    const params = t.params;
    if (typeof params !== 'object' || params === null || Array.isArray(params)) at('params', 'must be a table');
    else {
      for (const [key, spec] of Object.entries(params)) {
        if (typeof spec === 'object' && spec !== null && (spec as { required?: unknown }).required === true)
          def.requiredParams.push(key);
      }
    }
  }
  if (errors.length) throw new Error(`${file}: ${errors.join('; ')}`);
  return def;
}

export function describeTimeout(ms: number): string {
  return formatDuration(ms);
}
