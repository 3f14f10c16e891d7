import { parseCityConfig, type ConfigPatch } from '../../shared/config/city-config.js';
import type {
  AgentPatch,
  AgentPatchSetInputBody,
  ProviderPatch,
  ProviderPatchSetInputBody,
  RigPatch,
  RigPatchSetInputBody,
} from '../../shared/dto/patches.js';
import { parseDuration } from '../../shared/duration.js';
import { Problem } from '../../shared/http/problem.js';
import { appendTable, removeTable, setTableKeys, type TableValue } from './toml-table-edit.js';
import { editConfigFile, type ConfigFileHost } from './config-file-edit.js';

export type PatchKind = 'agent' | 'provider' | 'rig';
const FIELD = { agent: 'agents', provider: 'providers', rig: 'rigs' } as const;

/**
 * The keys of a patch a `PUT` body can say (its input body's fields, with `name` and `dir`). A `PUT` replaces
 * these; keys only the file can say (`pre_start_append`, `env_remove`, `pool`, …) are kept as written.
 */
const API_KEYS: Record<PatchKind, ReadonlySet<string>> = {
  agent: new Set([
    ...['name', 'dir', 'provider', 'scope', 'work_dir', 'description', 'prompt', 'scale_check', 'work_query'],
    ...['default_sling_formula', 'suspended', 'env', 'min_active_sessions', 'max_active_sessions', 'depends_on'],
    'idle_timeout',
  ]),
  provider: new Set(['name', 'command', 'prompt_mode', 'prompt_flag', 'args', 'args_append', 'ready_delay_ms', 'env']),
  rig: new Set(['name', 'path', 'prefix', 'default_branch', 'suspended']),
};

/**
 * The patches API: `[[patches.agent|provider|rig]]` tables of `city.toml`, one per target, set (a `PUT`
 * replaces what the API can say of the target's patch, keeping the keys only the file can say) and removed
 * surgically. A patch that would match nothing, or that breaks what it patches, is refused with 422 and the file
 * is left as it was.
 */
export class PatchEditor {
  constructor(private readonly city: ConfigFileHost) {}

  /** The patches of a kind, as written in `city.toml`. */
  list(kind: PatchKind): ConfigPatch[] {
    return this.city.config.patches[FIELD[kind]];
  }

  get(kind: PatchKind, name: string, dir?: string): ConfigPatch {
    const patch = this.list(kind).find((p) => p.name === name && (p.dir ?? '') === (dir ?? ''));
    if (!patch) throw new Problem('patch-not-found', `not_found: no ${kind} patch for ${target(name, dir)}`);
    return patch;
  }

  set(kind: PatchKind, name: string, dir: string | undefined, fields: Record<string, TableValue>): void {
    if (name.trim() === '') throw invalid('body.name', 'name is required');
    const key = `patches.${kind}`;
    editConfigFile(
      this.city,
      'city.toml',
      (text) => {
        const existing = parseCityConfig(text, 'city.toml').patches[FIELD[kind]];
        const index = existing.findIndex((p) => p.name === name && (p.dir ?? '') === (dir ?? ''));
        const table: Record<string, TableValue> = { name, ...(dir ? { dir } : {}), ...fields };
        if (index < 0) return appendTable(text, key, table);
        const keys: Record<string, TableValue | undefined> = { ...table };
        for (const k of Object.keys(existing[index]!.fields))
          if (!(k in keys) && API_KEYS[kind].has(k)) keys[k] = undefined;
        return setTableKeys(text, key, index, keys);
      },
      (composed) => {
        // The problems the new patch brings (one that matches nothing, a value of the wrong kind) refuse it.
        const mine = composed.problems.filter((p) => p.key?.startsWith(`${key}[`));
        const index = composed.config.patches[FIELD[kind]].findIndex(
          (p) => p.name === name && (p.dir ?? '') === (dir ?? ''),
        );
        const wrong = mine.find((p) => p.key === `${key}[${index}]`);
        if (wrong) throw invalid('body', wrong.message.replace(/^city\.toml: /, ''));
      },
    );
  }

  remove(kind: PatchKind, name: string, dir?: string): void {
    this.get(kind, name, dir);
    editConfigFile(this.city, 'city.toml', (text) => {
      const index = parseCityConfig(text, 'city.toml').patches[FIELD[kind]].findIndex(
        (p) => p.name === name && (p.dir ?? '') === (dir ?? ''),
      );
      if (index < 0) throw new Problem('patch-not-found', `not_found: no ${kind} patch for ${target(name, dir)}`);
      return removeTable(text, `patches.${kind}`, index);
    });
  }
}

function target(name: string, dir?: string): string {
  return dir ? `${dir}/${name}` : name;
}

function invalid(location: string, message: string): Problem {
  return new Problem('validation-failed', `invalid: ${message}`, { errors: [{ location, message }] });
}

/** An agent patch's keys from a `PUT` body. */
export function agentPatchFields(body: AgentPatchSetInputBody): Record<string, TableValue> {
  const out: Record<string, TableValue> = {};
  const strings = [
    'provider',
    'scope',
    'work_dir',
    'description',
    'prompt',
    'scale_check',
    'work_query',
    'default_sling_formula',
  ] as const;
  for (const k of strings) if (body[k] !== undefined) out[k] = body[k];
  if (body.suspended !== undefined) out.suspended = body.suspended;
  if (body.env !== undefined) out.env = body.env;
  if (body.min_active_sessions !== undefined) out.min_active_sessions = body.min_active_sessions;
  if (body.max_active_sessions !== undefined) out.max_active_sessions = body.max_active_sessions;
  if (body.depends_on !== undefined) out.depends_on = body.depends_on;
  if (body.idle_timeout !== undefined) {
    try {
      parseDuration(body.idle_timeout);
    } catch {
      throw invalid(
        'body.idle_timeout',
        `idle_timeout must be a duration such as 30s or 10m (got ${JSON.stringify(body.idle_timeout)})`,
      );
    }
    out.idle_timeout = body.idle_timeout;
  }
  if (Object.keys(out).length === 0) throw invalid('body', 'a patch sets at least one key');
  return out;
}

export function providerPatchFields(body: ProviderPatchSetInputBody): Record<string, TableValue> {
  const out: Record<string, TableValue> = {};
  for (const k of ['command', 'prompt_mode', 'prompt_flag'] as const) if (body[k] !== undefined) out[k] = body[k];
  if (body.args !== undefined) out.args = body.args;
  if (body.args_append !== undefined) out.args_append = body.args_append;
  if (body.ready_delay_ms !== undefined) out.ready_delay_ms = body.ready_delay_ms;
  if (body.env !== undefined) out.env = body.env;
  if (Object.keys(out).length === 0) throw invalid('body', 'a patch sets at least one key');
  return out;
}

export function rigPatchFields(body: RigPatchSetInputBody): Record<string, TableValue> {
  const out: Record<string, TableValue> = {};
  for (const k of ['path', 'prefix', 'default_branch'] as const) if (body[k] !== undefined) out[k] = body[k];
  if (body.suspended !== undefined) out.suspended = body.suspended;
  if (Object.keys(out).length === 0) throw invalid('body', 'a patch sets at least one key');
  return out;
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const num = (v: unknown): number | null => (typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : null);
const bool = (v: unknown): boolean | null => (typeof v === 'boolean' ? v : null);
const strs = (v: unknown): string[] | null => (Array.isArray(v) ? v.map(String) : null);
const env = (v: unknown): Record<string, string> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, string>) : {};

export function agentPatchView(p: ConfigPatch): AgentPatch {
  const f = p.fields;
  return {
    Name: p.name,
    Dir: p.dir ?? '',
    Provider: str(f.provider),
    Scope: str(f.scope),
    Suspended: bool(f.suspended),
    WorkDir: str(f.work_dir),
    Env: env(f.env),
    Description: str(f.description),
    Prompt: str(f.prompt),
    MinActiveSessions: num(f.min_active_sessions),
    MaxActiveSessions: num(f.max_active_sessions),
    ScaleCheck: str(f.scale_check),
    WorkQuery: str(f.work_query),
    IdleTimeout: str(f.idle_timeout),
    DependsOn: strs(f.depends_on),
    DefaultSlingFormula: str(f.default_sling_formula),
  };
}

export function providerPatchView(p: ConfigPatch): ProviderPatch {
  const f = p.fields;
  return {
    Name: p.name,
    Base: str(f.base),
    Command: str(f.command),
    Args: strs(f.args),
    ArgsAppend: strs(f.args_append),
    PromptMode: str(f.prompt_mode),
    PromptFlag: str(f.prompt_flag),
    ReadyDelayMs: num(f.ready_delay_ms),
    Env: env(f.env),
  };
}

export function rigPatchView(p: ConfigPatch): RigPatch {
  const f = p.fields;
  return {
    Name: p.name,
    Path: str(f.path),
    Prefix: str(f.prefix),
    DefaultBranch: str(f.default_branch),
    Suspended: bool(f.suspended),
  };
}
