import { parseDuration } from '../../shared/duration.js';
import { parseCidrs } from './access.js';

/** The verify schemes a `[[webhook]]` may name, as the reference has them. */
export const SCHEMES = ['github-hmac-sha256', 'hmac-sha256', 'slack-v0', 'discord-ed25519', 'jwt-jwks'] as const;
export type Scheme = (typeof SCHEMES)[number];

/** Every scheme but jwt-jwks reads its key (an HMAC secret, Discord's public key) from `secret_env`. */
const SECRET_SCHEMES: ReadonlySet<Scheme> = new Set([
  'github-hmac-sha256',
  'hmac-sha256',
  'slack-v0',
  'discord-ed25519',
]);

const NAME = /^[a-zA-Z0-9][a-zA-Z0-9_-]*$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const ARG_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** `[webhook.verify]`: how a delivery is authenticated. Secrets are named by variable, never written here. */
export interface WebhookVerify {
  scheme: Scheme;
  secretEnv?: string;
  signatureHeader?: string;
  eventHeader?: string;
  dedupHeader?: string;
  timestampHeader?: string;
  /** A signed timestamp's accepted skew (slack-v0, discord-ed25519); at most 15 minutes. */
  replayWindowMs?: number;
  /** A bearer token (`Authorization: Bearer …`) checked besides the signature. */
  bearerEnv?: string;
  /** Source addresses accepted (CIDR or bare address); none: any. */
  allowedCidrs: string[];
}

/** `[[webhook.rule]]`: a verified event it fires an order for. */
export interface WebhookRule {
  /** The provider's event type, or `*`. */
  event: string;
  /** Dotted payload paths and the values they must have (`*` any, `prefix*` a prefix). */
  match: Record<string, string>;
  order: string;
  rig?: string;
  /** The order's vars: templates of `{{payload.path}}`, `{{@event}}`, `{{@delivery}}`, `{{@identity}}`. */
  args: Record<string, string>;
}

/** One `[[webhook]]` of `city.toml`: `POST /v0/city/{city}/hook/{name}`. */
export interface WebhookDef {
  name: string;
  /** Its place among `city.toml`'s `[[webhook]]` tables (`webhook[<index>]` in messages). */
  index: number;
  scope: 'city' | 'rig';
  /** A rig-scoped webhook's rig: its rules fire that rig's instances only. */
  rig?: string;
  verify: WebhookVerify;
  rules: WebhookRule[];
  /** Lowers this webhook's rate limit below `[webhooks.rate_limit]`, never raises it. */
  maxPerMinute?: number;
}

/** `[[webhooks.jwt_policy]]`: a jwt-jwks webhook's trust anchor. */
export interface JwtPolicy {
  issuer: string;
  audience: string;
  jwksUrl: string;
}

export interface RateLimit {
  perMinute: number;
  burst: number;
}

/** `[webhooks]`: the city's policy for its webhooks. */
export interface WebhookPolicy {
  jwtPolicies: Map<string, JwtPolicy>;
  rateLimit: RateLimit;
  rateOverrides: Map<string, Partial<RateLimit>>;
}

/** As the reference: a few per second sustained, with a burst for a provider that sends a handful at once. */
export const DEFAULT_RATE_LIMIT: RateLimit = { perMinute: 300, burst: 60 };
/** The longest replay window a webhook may set (the reference's ceiling). */
export const MAX_REPLAY_WINDOW_MS = 15 * 60_000;

export interface WebhookProblem {
  key: string;
  message: string;
}

export interface ParsedWebhooks {
  webhooks: WebhookDef[];
  policy: WebhookPolicy;
  /** What is wrong, each naming its key; a broken `[[webhook]]` is left out, the others take deliveries. */
  problems: WebhookProblem[];
}

class Bad extends Error {
  constructor(
    readonly key: string,
    message: string,
  ) {
    super(message);
  }
}

/** The `[[webhook]]` tables and `[webhooks]` policy of a parsed `city.toml`. */
export function parseWebhooks(doc: Record<string, unknown>): ParsedWebhooks {
  const problems: WebhookProblem[] = [];
  const policy = parsePolicy(doc.webhooks, problems);
  const webhooks: WebhookDef[] = [];
  const raw = doc.webhook;
  if (raw !== undefined && !Array.isArray(raw)) {
    problems.push({ key: 'webhook', message: 'webhook must be an array of tables ([[webhook]])' });
    return { webhooks, policy, problems };
  }
  const seen = new Set<string>();
  for (const [i, table] of (raw ?? []).entries()) {
    try {
      const def = { ...parseWebhook(table, `webhook[${i}]`), index: i };
      if (seen.has(def.name)) throw new Bad(`webhook[${i}].name`, `two webhooks are named ${def.name}`);
      seen.add(def.name);
      if (def.verify.scheme === 'jwt-jwks' && !policy.jwtPolicies.has(def.name)) {
        throw new Bad(
          `webhook[${i}].verify.scheme`,
          `jwt-jwks needs a [[webhooks.jwt_policy]] with name = "${def.name}" (its issuer, audience and jwks_url)`,
        );
      }
      webhooks.push(def);
    } catch (err) {
      if (!(err instanceof Bad)) throw err;
      problems.push({ key: err.key, message: `${err.key}: ${err.message}` });
    }
  }
  return { webhooks, policy, problems };
}

function parseWebhook(value: unknown, at: string): Omit<WebhookDef, 'index'> {
  const t = tableAt(value, at);
  const name = str(t, 'name', at);
  if (name === undefined) throw new Bad(`${at}.name`, 'a webhook needs a name');
  if (!NAME.test(name)) throw new Bad(`${at}.name`, `"${name}" must match ${NAME.source}`);
  const scope = str(t, 'scope', at) ?? 'city';
  if (scope !== 'city' && scope !== 'rig') throw new Bad(`${at}.scope`, `must be "city" or "rig", not "${scope}"`);
  const rig = str(t, 'rig', at);
  if (scope === 'rig' && !rig) throw new Bad(`${at}.rig`, 'scope = "rig" needs the rig it fires for');
  if (scope === 'city' && rig) throw new Bad(`${at}.rig`, 'is only for scope = "rig" (a rule may name a rig)');
  const maxPerMinute = t.max_per_minute;
  if (maxPerMinute !== undefined && (!Number.isInteger(maxPerMinute) || (maxPerMinute as number) < 0)) {
    throw new Bad(`${at}.max_per_minute`, 'must be a whole number, 0 or more');
  }
  const verify = parseVerify(t.verify, `${at}.verify`);
  const rawRules = t.rule;
  if (!Array.isArray(rawRules) || rawRules.length === 0) {
    throw new Bad(`${at}.rule`, 'a webhook needs at least one [[webhook.rule]]');
  }
  const rules = rawRules.map((r, j) => parseRule(r, `${at}.rule[${j}]`, rig));
  return {
    name,
    scope,
    ...(rig ? { rig } : {}),
    verify,
    rules,
    ...(maxPerMinute !== undefined ? { maxPerMinute: maxPerMinute as number } : {}),
  };
}

function parseVerify(value: unknown, at: string): WebhookVerify {
  if (value === undefined)
    throw new Bad(`${at}.scheme`, `a webhook needs [webhook.verify] scheme (${SCHEMES.join(', ')})`);
  const t = tableAt(value, at);
  const scheme = str(t, 'scheme', at);
  if (!scheme || !(SCHEMES as readonly string[]).includes(scheme)) {
    throw new Bad(
      `${at}.scheme`,
      `${scheme ? `"${scheme}" is not a scheme; one of` : 'needs one of'} ${SCHEMES.join(', ')}`,
    );
  }
  const verify: WebhookVerify = { scheme: scheme as Scheme, allowedCidrs: [] };
  const secretEnv = envName(t, 'secret_env', at);
  if (secretEnv) verify.secretEnv = secretEnv;
  else if (SECRET_SCHEMES.has(verify.scheme)) {
    throw new Bad(`${at}.secret_env`, `scheme ${scheme} needs secret_env, the variable holding its key`);
  }
  const bearerEnv = envName(t, 'bearer_env', at);
  if (bearerEnv) verify.bearerEnv = bearerEnv;
  for (const [key, field] of [
    ['signature_header', 'signatureHeader'],
    ['event_header', 'eventHeader'],
    ['dedup_header', 'dedupHeader'],
    ['timestamp_header', 'timestampHeader'],
  ] as const) {
    const header = str(t, key, at);
    if (header !== undefined && !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(header)) {
      throw new Bad(`${at}.${key}`, `"${header}" is not a header name`);
    }
    if (header) verify[field] = header;
  }
  if (verify.scheme === 'hmac-sha256' && !verify.signatureHeader) {
    throw new Bad(
      `${at}.signature_header`,
      'scheme hmac-sha256 needs signature_header, the header its sender signs in',
    );
  }
  const window = str(t, 'replay_window', at);
  if (window !== undefined) {
    let ms: number;
    try {
      ms = parseDuration(window);
    } catch (err) {
      throw new Bad(`${at}.replay_window`, (err as Error).message);
    }
    if (ms <= 0 || ms > MAX_REPLAY_WINDOW_MS)
      throw new Bad(`${at}.replay_window`, 'must be more than 0 and at most 15m');
    verify.replayWindowMs = ms;
  }
  const cidrs = t.allowed_cidrs;
  if (cidrs !== undefined) {
    if (!Array.isArray(cidrs) || cidrs.some((c) => typeof c !== 'string')) {
      throw new Bad(`${at}.allowed_cidrs`, 'must be an array of CIDRs or addresses');
    }
    try {
      parseCidrs(cidrs as string[]);
    } catch (err) {
      throw new Bad(`${at}.allowed_cidrs`, (err as Error).message);
    }
    verify.allowedCidrs = cidrs as string[];
  }
  return verify;
}

function parseRule(value: unknown, at: string, webhookRig: string | undefined): WebhookRule {
  const t = tableAt(value, at);
  const event = str(t, 'event', at);
  if (!event) throw new Bad(`${at}.event`, 'a rule needs the event it matches (or "*")');
  const target = str(t, 'target', at) ?? 'order';
  if (target === 'conversation') {
    throw new Bad(`${at}.target`, 'target = "conversation" is not supported: a rule fires an order (target = "order")');
  }
  if (target !== 'order') throw new Bad(`${at}.target`, `must be "order", not "${target}"`);
  const order = str(t, 'order', at);
  if (!order) throw new Bad(`${at}.order`, 'a rule needs the order it fires (a trigger = "webhook" order)');
  const rig = str(t, 'rig', at);
  if (webhookRig && rig && rig !== webhookRig) {
    throw new Bad(`${at}.rig`, `the webhook fires for rig ${webhookRig} only, not ${rig}`);
  }
  // `pull_request.state = "open"` unquoted is a nested table in TOML: the same path as the quoted key.
  const match = stringMap(t.match, `${at}.match`, true);
  const args = stringMap(t.args, `${at}.args`);
  for (const key of Object.keys(args)) {
    if (!ARG_NAME.test(key)) throw new Bad(`${at}.args.${key}`, `an arg's name must match ${ARG_NAME.source}`);
  }
  return { event, match, order, ...(rig ? { rig } : {}), args };
}

function parsePolicy(value: unknown, problems: WebhookProblem[]): WebhookPolicy {
  const policy: WebhookPolicy = {
    jwtPolicies: new Map(),
    rateLimit: { ...DEFAULT_RATE_LIMIT },
    rateOverrides: new Map(),
  };
  if (value === undefined) return policy;
  const guard = (fn: () => void) => {
    try {
      fn();
    } catch (err) {
      if (!(err instanceof Bad)) throw err;
      problems.push({ key: err.key, message: `${err.key}: ${err.message}` });
    }
  };
  guard(() => {
    const t = tableAt(value, 'webhooks');
    const jwt = t.jwt_policy;
    if (jwt !== undefined && !Array.isArray(jwt))
      throw new Bad('webhooks.jwt_policy', 'must be [[webhooks.jwt_policy]] tables');
    for (const [i, entry] of ((jwt as unknown[]) ?? []).entries()) {
      guard(() => {
        const at = `webhooks.jwt_policy[${i}]`;
        const p = tableAt(entry, at);
        const need = (key: string) => {
          const v = str(p, key, at);
          if (!v) throw new Bad(`${at}.${key}`, `a jwt_policy needs ${key}`);
          return v;
        };
        const name = need('name');
        const jwksUrl = need('jwks_url');
        let url: URL;
        try {
          url = new URL(jwksUrl);
        } catch {
          throw new Bad(`${at}.jwks_url`, `"${jwksUrl}" is not a URL`);
        }
        if (url.protocol !== 'https:') throw new Bad(`${at}.jwks_url`, 'must be an https URL');
        policy.jwtPolicies.set(name, { issuer: need('issuer'), audience: need('audience'), jwksUrl });
      });
    }
    const rate = t.rate_limit;
    if (rate === undefined) return;
    const r = tableAt(rate, 'webhooks.rate_limit');
    const limits = (table: Record<string, unknown>, at: string): Partial<RateLimit> => {
      const out: Partial<RateLimit> = {};
      for (const [key, field] of [
        ['per_minute', 'perMinute'],
        ['burst', 'burst'],
      ] as const) {
        const v = table[key];
        if (v === undefined) continue;
        if (!Number.isInteger(v) || (v as number) < 1)
          throw new Bad(`${at}.${key}`, 'must be a whole number, 1 or more');
        out[field] = v as number;
      }
      return out;
    };
    policy.rateLimit = { ...DEFAULT_RATE_LIMIT, ...limits(r, 'webhooks.rate_limit') };
    const overrides = r.override;
    if (overrides !== undefined && !Array.isArray(overrides)) {
      throw new Bad('webhooks.rate_limit.override', 'must be [[webhooks.rate_limit.override]] tables');
    }
    for (const [i, entry] of ((overrides as unknown[]) ?? []).entries()) {
      guard(() => {
        const at = `webhooks.rate_limit.override[${i}]`;
        const o = tableAt(entry, at);
        const name = str(o, 'name', at);
        if (!name) throw new Bad(`${at}.name`, 'an override needs the webhook it is for');
        policy.rateOverrides.set(name, limits(o, at));
      });
    }
  });
  return policy;
}

/**
 * The rate a webhook's deliveries are held to: the city's, the operator's override for it, then its own
 * `max_per_minute`, which only lowers it. The burst is never more than the rate allows in a minute, so a webhook
 * of `max_per_minute = 1` takes one delivery a minute, not a burst of sixty.
 */
export function effectiveRateLimit(policy: WebhookPolicy, def: WebhookDef): RateLimit {
  const limit = { ...policy.rateLimit, ...policy.rateOverrides.get(def.name) };
  if (def.maxPerMinute !== undefined && def.maxPerMinute < limit.perMinute) limit.perMinute = def.maxPerMinute;
  limit.burst = Math.max(1, Math.min(limit.burst, limit.perMinute));
  return limit;
}

function tableAt(value: unknown, at: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Bad(at, 'must be a table');
  return value as Record<string, unknown>;
}

function str(t: Record<string, unknown>, key: string, at: string): string | undefined {
  const v = t[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw new Bad(`${at}.${key}`, 'must be a string');
  return v.trim();
}

function envName(t: Record<string, unknown>, key: string, at: string): string | undefined {
  const v = str(t, key, at);
  if (v && !ENV_NAME.test(v)) throw new Bad(`${at}.${key}`, `"${v}" is not an environment variable name`);
  return v || undefined;
}

function stringMap(value: unknown, at: string, nested = false, prefix = ''): Record<string, string> {
  if (value === undefined) return {};
  const t = tableAt(value, at);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(t)) {
    if (nested && typeof v === 'object' && v !== null && !Array.isArray(v)) {
      Object.assign(out, stringMap(v, `${at}.${k}`, true, `${prefix}${k}.`));
      continue;
    }
    if (typeof v !== 'string') throw new Bad(`${at}.${k}`, 'must be a string');
    out[`${prefix}${k}`] = v;
  }
  return out;
}
