import { isDeepStrictEqual } from 'node:util';
import { configReadError, parseCityConfig, type CityConfig } from '../../shared/config/city-config.js';
import { ConfigError } from '../../shared/config/config-error.js';
import { readTomlText } from '../../shared/config/toml-file.js';
import { editConfigFile, type ConfigFileHost } from './config-file-edit.js';
import type { ErrorDetail } from '../../shared/dto/errors.js';
import type {
  ProviderCreateInputBody,
  ProviderCreatedOutputBody,
  ProviderUpdateInputBody,
} from '../../shared/dto/providers.js';
import { Problem } from '../../shared/http/problem.js';
import { Serial } from '../../shared/serial.js';
import { checkAgents } from '../agent-catalog/check-agents.js';
import { IDEMPOTENCY_TTL_MS } from '../beads/bead-rules.js';
import { bodyHash } from '../beads/beads-service.js';
import type { ProviderTable } from './provider-table-edit.js';
import { PRESETS } from '../providers/presets.js';
import type { ResolvedProvider } from '../providers/provider-spec.js';
import { ProviderRegistry } from '../providers/provider-registry.js';
import { ProviderConfigError, resolveCityProviders, WORKSPACE_PROVIDER } from '../providers/resolve.js';

let tomlEdit: typeof import('./provider-table-edit.js') | undefined;

/** The settings of a `[providers.<name>]` table, in the order a new table is written. */
const SETTINGS = [
  'base',
  'display_name',
  'command',
  'args',
  'args_append',
  'env',
  'protocol',
  'runtime',
  'prompt_mode',
  'prompt_flag',
  'resume_args',
  'system_prompt_args',
  'settings_args',
  'ready_prompt_prefix',
  'screen_rules',
  'ready_delay_ms',
  'quiet_ms',
  'pending_pattern',
  'permission_modes',
  'default_permission_mode',
  'option_defaults',
  'process_names',
] as const;

/** Settings that are tables: a PATCH merges them key by key. */
const MERGED = new Set<string>(['env', 'permission_modes', 'option_defaults']);

/** How `city.toml` reads in messages about an edit (the person knows where their city is). */
const FILE = 'city.toml';

const IDEMPOTENCY_CAP = 1024;

/** `city.toml` as it is on disk now, checked: what an edit starts from. */
interface Current {
  config: CityConfig;
  registry: ProviderRegistry;
}

/**
 * The provider API's writes: each one reads `city.toml`, checks the change against the city's own providers
 * (naming the setting at fault, or who would break), then rewrites only the provider's table through the edit
 * funnel (`editConfigFile`: the whole city composed before the write, patches and packs included, and taken at
 * once) — so the next `GET /providers` and the next session start see it, and a running session is left alone.
 * One write at a time: two concurrent requests never lose one.
 */
export class ProviderEditor {
  private readonly writes = new Serial();
  private readonly replies = new Map<string, { hash: string; at: number; reply: ProviderCreatedOutputBody }>();

  constructor(private readonly host: ConfigFileHost) {}

  /** Writes a new `[providers.<name>]` table. 409 when the name is taken, 422 naming the setting that is wrong. */
  create(body: ProviderCreateInputBody, idempotencyKey?: string): Promise<ProviderCreatedOutputBody> {
    return this.exclusive(() => {
      const hash = idempotencyKey === undefined ? undefined : bodyHash(body);
      if (idempotencyKey !== undefined) {
        const earlier = this.replies.get(idempotencyKey);
        if (earlier && Date.now() - earlier.at < IDEMPOTENCY_TTL_MS) {
          if (earlier.hash !== hash) {
            throw new Problem(
              'idempotency-mismatch',
              'idempotency_mismatch: this Idempotency-Key was used with a different request body',
            );
          }
          return earlier.reply;
        }
      }
      const { name, ...settings } = body;
      const current = this.current();
      if (current.registry.get(name) || Object.hasOwn(current.config.providers, name)) {
        throw new Problem('conflict-wrong-state', `conflict: provider already exists: ${name}`);
      }
      this.write(current, name, tableOf(settings));
      const reply: ProviderCreatedOutputBody = { status: 'created', provider: name };
      if (idempotencyKey !== undefined) this.remember(idempotencyKey, hash!, reply);
      return reply;
    });
  }

  /**
   * Merges settings into the provider's table: a built-in preset the city has no table for gets one that adjusts
   * it. `null` removes a setting. Answers the provider as it now resolves.
   */
  update(name: string, body: ProviderUpdateInputBody): Promise<ResolvedProvider> {
    return this.exclusive(() => {
      const current = this.current();
      const provider = current.registry.get(name);
      const own = Object.hasOwn(current.config.providers, name) ? current.config.providers[name] : undefined;
      if (!provider && !own) throw notFound(name);
      if (!own && name === WORKSPACE_PROVIDER && !Object.hasOwn(PRESETS, name))
        throw startCommandProvider(name, 'changed');
      const table: ProviderTable = { ...(own ?? {}) };
      for (const key of SETTINGS) {
        const value = body[key];
        if (value === undefined) continue;
        if (value === null) delete table[key];
        else if (MERGED.has(key)) table[key] = { ...(table[key] as object | undefined), ...(value as object) };
        else table[key] = value;
      }
      if (own ? isDeepStrictEqual(plainTable(own), table) : Object.keys(table).length === 0) return provider!;
      return this.write(current, name, table).get(name)!;
    });
  }

  /**
   * Removes the city's table of a provider. A built-in preset stays (as it is built in); a provider still named by
   * an `[[agent]]`, `[workspace] provider` or another provider's `base` is a 409 naming who uses it.
   */
  remove(name: string): Promise<void> {
    return this.exclusive(() => {
      const current = this.current();
      const { config } = current;
      if (!Object.hasOwn(config.providers, name)) {
        if (!current.registry.get(name)) throw notFound(name);
        if (Object.hasOwn(PRESETS, name)) {
          throw new Problem('conflict-wrong-state', `conflict: provider ${name} is built in and cannot be deleted`);
        }
        throw startCommandProvider(name, 'deleted');
      }
      // A preset's table only adjusts it: without the table the preset is still there for whoever uses it.
      if (!Object.hasOwn(PRESETS, name)) {
        const users = [
          ...config.agents.filter((a) => a.provider === name).map((a) => `agent ${a.name}`),
          ...(config.workspace.provider === name ? ['[workspace] provider'] : []),
          ...Object.entries(config.providers)
            .filter(([other, table]) => other !== name && [name, `provider:${name}`].includes(table.base as string))
            .map(([other]) => `provider ${other} (its base)`),
        ];
        if (users.length > 0) {
          throw new Problem('conflict-wrong-state', `conflict: provider ${name} is in use by ${users.join(', ')}`);
        }
      }
      this.write(current, name, undefined);
    });
  }

  /** Runs `fn` after every write queued before it has finished. */
  private exclusive<T>(fn: () => T): Promise<T> {
    return this.writes.run(async () => {
      // The TOML editor (and its library) is loaded by the first edit, not by every controller that never edits.
      tomlEdit ??= await import('./provider-table-edit.js');
      return fn();
    });
  }

  /** `city.toml` now; a file a person broke by hand is a 409 (it is theirs to mend, not ours to overwrite). */
  private current(): Current {
    try {
      const text = readTomlText(this.host.paths.config, FILE);
      // Broken [[service]] tables alone do not stop an edit of a provider: the funnel names them as warnings.
      const config = parseCityConfig(text, FILE, { serviceProblems: [] });
      const registry = new ProviderRegistry(config, FILE);
      checkAgents(config, FILE);
      return { config, registry };
    } catch (err) {
      const error =
        err instanceof ConfigError ? err : (err as NodeJS.ErrnoException).code ? configReadError(err, FILE) : undefined;
      if (!error) throw err;
      throw new Problem(
        'conflict-wrong-state',
        `conflict: city.toml is not valid as it is on disk; fix it by hand first: ${error.message}`,
      );
    }
  }

  /**
   * Checks the city's providers with provider `name`'s table replaced (or removed), then writes it through the
   * funnel, which composes the whole city first. Answers the city's providers as they now resolve.
   */
  private write(current: Current, name: string, table: ProviderTable | undefined): ProviderRegistry {
    const providers = { ...current.config.providers };
    if (table === undefined) delete providers[name];
    else providers[name] = table;
    const next: CityConfig = { ...current.config, providers };
    const { errors } = resolveCityProviders(providers, { startCommand: next.workspace.startCommand }, FILE);
    const own = errors.get(name);
    if (own) throw invalid(own);
    const [other] = errors.entries();
    if (other) {
      throw new Problem(
        'conflict-wrong-state',
        `conflict: provider ${other[0]} would no longer be valid: ${other[1].message}`,
      );
    }
    const registry = new ProviderRegistry(next, FILE);
    try {
      checkAgents(next, FILE);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      throw new Problem('conflict-wrong-state', `conflict: ${err.message}`);
    }
    const edit = tomlEdit!;
    editConfigFile(this.host, 'city.toml', (text) => {
      try {
        return edit.setProviderTable(text, name, table);
      } catch (err) {
        if (!(err instanceof edit.TomlEditError)) throw err;
        throw new Problem('internal', `internal: city.toml was not changed: ${err.message}`);
      }
    });
    return registry;
  }

  private remember(key: string, hash: string, reply: ProviderCreatedOutputBody): void {
    const now = Date.now();
    for (const [k, entry] of this.replies) if (now - entry.at >= IDEMPOTENCY_TTL_MS) this.replies.delete(k);
    while (this.replies.size >= IDEMPOTENCY_CAP) this.replies.delete(this.replies.keys().next().value!);
    this.replies.set(key, { hash, at: now, reply });
  }
}

/** A new table from settings, in the order of SETTINGS, without the ones not given. */
function tableOf(settings: Record<string, unknown>): ProviderTable {
  const table: ProviderTable = {};
  for (const key of SETTINGS) if (settings[key] !== undefined && settings[key] !== null) table[key] = settings[key];
  return table;
}

/** smol-toml's tables have no prototype; as plain objects they compare with what a request built. */
function plainTable(table: Record<string, unknown>): ProviderTable {
  return JSON.parse(JSON.stringify(table)) as ProviderTable;
}

/** A 422 naming the setting at fault (`body.base`, `body.command`, …), or the body when it is no one setting. */
function invalid(err: ConfigError): Problem {
  const key = err instanceof ProviderConfigError ? err.key : undefined;
  const errors: ErrorDetail[] = [{ location: key ? `body.${key}` : 'body', message: err.message }];
  return new Problem('validation-failed', `invalid: ${err.message}`, { errors });
}

function notFound(name: string): Problem {
  return new Problem('provider-not-found', `not_found: provider not found: ${name}`);
}

function startCommandProvider(name: string, what: string): Problem {
  return new Problem(
    'conflict-wrong-state',
    `conflict: provider ${name} is the city's [workspace] start_command; it is ${what} there, not here`,
  );
}
