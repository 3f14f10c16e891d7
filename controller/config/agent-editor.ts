import { AGENT_NAME_PATTERN } from '../../shared/config/city-config.js';
import type { AgentCreateInputBody, AgentUpdateInputBody } from '../../shared/dto/agents.js';
import { parseDuration } from '../../shared/duration.js';
import { Problem } from '../../shared/http/problem.js';
import { qualifiedName, type AgentDefinition } from '../agent-catalog/agent-catalog.js';
import { optionProblems } from '../providers/provider-options.js';
import type { ResolvedProvider } from '../providers/provider-spec.js';
import { PatchEditor } from './patch-editor.js';
import { editConfigFile, type ConfigFile, type ConfigFileHost } from './config-file-edit.js';
import {
  TomlTableEditError,
  appendTable,
  removeTable,
  setTableKeys,
  setFileKeys,
  type TableValue,
} from './toml-table-edit.js';

/** What the agent editor needs of the controller: the edit funnel's host, its agents and its providers. */
export interface AgentEditorHost extends ConfigFileHost {
  /** An agent by its qualified name (`base`, or `dir/base`). */
  agent(name: string): AgentDefinition | undefined;
  readonly providers: { get(name: string): ResolvedProvider | undefined };
}

/**
 * The agents API's writes: each goes to the file the agent is declared in (`city.toml`'s `[[agent]]` table, or
 * `agents/<name>/agent.toml`), edited line by line through the edit funnel (`editConfigFile`): composed before
 * it is written, refused with a 422 when the city it leaves is not usable, taken by the controller at once. A
 * file a person broke by hand is a 409: it is theirs to mend, not ours to overwrite.
 */
export class AgentEditor {
  constructor(private readonly city: AgentEditorHost) {}

  create(body: AgentCreateInputBody): string {
    const name = qualifiedName(body, this.city.config.rigs);
    if (!AGENT_NAME_PATTERN.test(body.name)) throw invalid('body.name', `name must match ${AGENT_NAME_PATTERN.source}`);
    if (this.city.agent(name)) throw new Problem('conflict-wrong-state', `conflict: agent ${name} already exists`);
    if (!this.city.providers.get(body.provider)) {
      throw invalid(
        'body.provider',
        `provider ${body.provider} is neither built in nor defined in [providers]`,
        body.provider,
      );
    }
    const fields: Record<string, TableValue> = { name: body.name, provider: body.provider };
    if (body.dir !== undefined) fields.dir = body.dir;
    if (body.scope !== undefined) fields.scope = body.scope;
    if (body.description !== undefined) fields.description = body.description;
    if (body.prompt !== undefined) fields.prompt = body.prompt;
    if (body.min_active_sessions !== undefined) fields.min_active_sessions = body.min_active_sessions;
    if (body.max_active_sessions !== undefined) fields.max_active_sessions = body.max_active_sessions;
    if (body.idle_timeout !== undefined) fields.idle_timeout = duration(body.idle_timeout);
    if (body.depends_on !== undefined) fields.depends_on = body.depends_on;
    if (body.suspended !== undefined) fields.suspended = body.suspended;
    if (body.option_defaults !== undefined && Object.keys(body.option_defaults).length > 0) {
      checkOptions(this.city.providers.get(body.provider)!, body.option_defaults);
      fields.option_defaults = body.option_defaults;
    }
    this.writeCityToml((text) => appendTable(text, 'agent', fields));
    return name;
  }

  /** Changes keys of the agent's table; `suspended` is what suspend and resume write. */
  update(definition: AgentDefinition, body: AgentUpdateInputBody): void {
    const keys: Record<string, TableValue | undefined> = {};
    if (body.provider !== undefined) {
      if (!this.city.providers.get(body.provider)) {
        throw invalid(
          'body.provider',
          `provider ${body.provider} is neither built in nor defined in [providers]`,
          body.provider,
        );
      }
      keys.provider = body.provider;
    }
    if (body.scope !== undefined) keys.scope = body.scope;
    if (body.description !== undefined) keys.description = body.description;
    if (body.suspended !== undefined) keys.suspended = body.suspended ? true : undefined;
    if (body.min_active_sessions !== undefined) keys.min_active_sessions = body.min_active_sessions;
    if (body.max_active_sessions !== undefined) keys.max_active_sessions = body.max_active_sessions;
    if (body.idle_timeout !== undefined)
      keys.idle_timeout = body.idle_timeout === '' ? undefined : duration(body.idle_timeout);
    if (body.option_defaults !== undefined) {
      // Merged key by key into what it has; null (or an empty table) removes them all.
      const merged =
        body.option_defaults === null ? {} : { ...definition.config.option_defaults, ...body.option_defaults };
      const provider = this.city.providers.get(body.provider ?? definition.providerName ?? '');
      if (provider) checkOptions(provider, merged);
      keys.option_defaults = Object.keys(merged).length > 0 ? merged : undefined;
    } else if (body.provider !== undefined && definition.config.option_defaults) {
      // A new provider must offer the options the agent already has.
      checkOptions(this.city.providers.get(body.provider)!, definition.config.option_defaults);
    }
    const min = body.min_active_sessions ?? definition.config.min_active_sessions;
    const max = body.max_active_sessions ?? definition.config.max_active_sessions;
    if (min !== undefined && max !== undefined && min > max) {
      throw invalid(
        'body.min_active_sessions',
        `min_active_sessions (${min}) is more than max_active_sessions (${max})`,
      );
    }
    if (Object.keys(keys).length === 0) return;
    if (definition.config.origin === 'pack-derived' || definition.config.source === 'pack.toml') {
      this.patch(definition, keys);
    } else if (definition.config.source === 'city.toml') {
      const index = this.indexInCityToml(definition);
      this.writeCityToml((text) => setTableKeys(text, 'agent', index, keys));
    } else {
      this.writeAgentFile(definition, keys);
    }
  }

  remove(definition: AgentDefinition): void {
    if (definition.config.origin === 'pack-derived') {
      throw new Problem(
        'conflict-wrong-state',
        `conflict: agent ${definition.name} comes from pack ${definition.config.pack}; remove the pack (DELETE /packs/${definition.config.pack?.split('.')[0]}) or suspend the agent`,
      );
    }
    if (definition.config.source !== 'city.toml') {
      throw new Problem(
        'conflict-wrong-state',
        `conflict: agent ${definition.name} is its own directory (${definition.config.source}); remove agents/${definition.base}/ to delete it`,
      );
    }
    const index = this.indexInCityToml(definition);
    this.writeCityToml((text) => removeTable(text, 'agent', index));
  }

  /**
   * An agent a pack brings (or the root pack.toml declares) is not ours to edit in place — a pack's files are
   * the pack's, in the cache — so a change to it is its `[[patches.agent]]` in city.toml: the keys merged into
   * the patch it has, the patch removed when nothing is left in it.
   */
  private patch(definition: AgentDefinition, keys: Record<string, TableValue | undefined>): void {
    const patches = new PatchEditor(this.city);
    const name = definition.config.name;
    const existing = patches.list('agent').find((p) => p.name === name && (p.dir ?? '') === (definition.rig ?? ''));
    const fields = { ...((existing?.fields ?? {}) as Record<string, TableValue>) };
    for (const [key, value] of Object.entries(keys)) {
      if (value === undefined) delete fields[key];
      else fields[key] = value;
    }
    if (Object.keys(fields).length > 0) patches.set('agent', name, definition.rig, fields);
    else if (existing) patches.remove('agent', name, definition.rig);
  }

  /** Sets `[workspace] suspended` (the city's suspension). */
  setCitySuspended(suspended: boolean): void {
    this.writeCityToml((text) => setWorkspaceKey(text, 'suspended', suspended));
  }

  /** Where the agent's table is among `city.toml`'s `[[agent]]` tables. */
  private indexInCityToml(definition: AgentDefinition): number {
    const agents = this.city.config.agents;
    const index = agents.findIndex(
      (a) => a.source === 'city.toml' && qualifiedName(a, this.city.config.rigs) === definition.name,
    );
    if (index < 0) throw new Problem('agent-not-found', `not_found: agent not found: ${definition.name}`);
    return index;
  }

  /** Reads `city.toml`, applies `edit`, writes it (mode kept) and reloads: all at once, no other write between. */
  private writeCityToml(edit: (text: string) => string): void {
    editConfigFile(this.city, 'city.toml', edit);
  }

  /** The agent's own `agents/<name>/agent.toml` (started when the directory has only a prompt). */
  private writeAgentFile(definition: AgentDefinition, keys: Record<string, TableValue | undefined>): void {
    const file = definition.config.source;
    if (!isAgentFile(file)) {
      throw new Problem('internal', `internal: agent ${definition.name} is declared in ${file}, not a file we edit`);
    }
    editConfigFile(this.city, file, (text) => {
      try {
        return setFileKeys(text, keys);
      } catch (err) {
        if (!(err instanceof TomlTableEditError)) throw err;
        throw new Problem('conflict-wrong-state', `conflict: ${file} was not changed: ${err.message}`);
      }
    });
  }
}

/** Whether `source` is a city agent directory's `agent.toml` (not a pack's: `pack:…/agents/…`). */
function isAgentFile(source: string): source is ConfigFile {
  return /^agents\/[^/]+\/agent\.toml$/.test(source);
}

/** `[workspace] <key>` set, the rest of the file as it was. */
function setWorkspaceKey(text: string, key: string, value: boolean): string {
  const lines = text.split('\n');
  const header = lines.findIndex((l) => /^\s*\[\s*workspace\s*\]\s*(#.*)?$/.test(l));
  if (header < 0) {
    const first = lines.findIndex((l) => /^\s*\[/.test(l));
    const block = ['[workspace]', `${key} = ${value}`, ''];
    if (first < 0) return `${text}${text.endsWith('\n') || text === '' ? '' : '\n'}${block.join('\n')}`;
    return [...lines.slice(0, first), ...block, ...lines.slice(first)].join('\n');
  }
  let end = lines.findIndex((l, i) => i > header && /^\s*\[/.test(l));
  if (end < 0) end = lines.length;
  const pattern = new RegExp(`^\\s*${key}\\s*=`);
  const at = lines.slice(header + 1, end).findIndex((l) => pattern.test(l));
  if (at >= 0) {
    lines[header + 1 + at] = `${key} = ${value}`;
    return lines.join('\n');
  }
  let insert = end;
  while (insert > header + 1 && (lines[insert - 1]!.trim() === '' || /^\s*#/.test(lines[insert - 1]!))) insert--;
  lines.splice(insert, 0, `${key} = ${value}`);
  return lines.join('\n');
}

function duration(text: string): string {
  try {
    parseDuration(text);
  } catch {
    throw invalid('body.idle_timeout', `idle_timeout must be a duration such as 30s, 5m or 1h30m`, text);
  }
  return text;
}

/** Options an agent's provider does not offer (or values it does not take): a 422 naming each. */
function checkOptions(provider: ResolvedProvider, options: Record<string, string>): void {
  const problems = optionProblems(provider, options);
  if (problems.length === 0) return;
  throw new Problem('validation-failed', `invalid: ${problems.map((p) => p.message).join('; ')}`, {
    errors: problems.map((p) => ({
      location: `body.option_defaults.${p.key}`,
      message: p.message,
      value: options[p.key],
    })),
  });
}

function invalid(location: string, message: string, value?: unknown): Problem {
  return new Problem('validation-failed', `invalid: ${message}`, {
    errors: [{ location, message, ...(value !== undefined ? { value } : {}) }],
  });
}
