import { BINDING_PATTERN, type PackImport } from '../../shared/config/city-config.js';
import { ConfigError } from '../../shared/config/config-error.js';
import type { PackAddInputBody, PackAddResponseBody, PackResponse } from '../../shared/dto/packs.js';
import { Problem } from '../../shared/http/problem.js';
import { agentDirectories, type AgentDefinition } from '../agent-catalog/agent-catalog.js';
import type { ComposedConfig } from './compose.js';
import { editConfigFile, type ConfigFileHost } from './config-file-edit.js';
import { appendPlainTable, removePlainTable, type TableValue } from './toml-table-edit.js';
import {
  fetchPack,
  packCacheRoot,
  PackFetchError,
  readPackLock,
  writePackLock,
  type PackLockEntry,
} from '../packs/pack-cache.js';
import { readPackFile } from '../packs/pack-file.js';
import {
  bindingFor,
  checkSourceAllowed,
  machineSourcePolicy,
  parsePackSource,
  PackSourceError,
  type PackSourcePolicy,
} from '../packs/pack-source.js';

/** What git says when a repository wants credentials we do not have. */
const CREDENTIALS =
  /authentication failed|could not read username|permission denied \(publickey\)|terminal prompts disabled/i;

/** What the packs API needs of the city: its configuration (to edit), how it composed, and its agents. */
export interface PacksHost extends ConfigFileHost {
  readonly composed: ComposedConfig;
  readonly agents: AgentDefinition[];
}

/**
 * The packs API: the city's direct imports (`[imports.<name>]`). Adding one checks the source against the
 * machine's policy, fetches a git source into the pack cache (and every git pack it imports in turn), checks
 * what it holds, records the resolved commits in `packs.lock`, and only then writes the import; a failure at
 * any step leaves `city.toml` and `packs.lock` as they were.
 */
export class PackEditor {
  constructor(private readonly city: PacksHost) {}

  list(): PackResponse[] {
    return this.city.composed.packs
      .filter((p) => p.direct)
      .map((p) => ({
        name: p.binding,
        source: p.source,
        git_backed: p.gitBacked,
        agents: this.agentsOf(p.binding),
        ...(p.version !== undefined ? { version: p.version } : {}),
        ...(p.commit ? { commit: p.commit } : {}),
        ...(p.packName ? { pack_name: p.packName } : {}),
        ...(p.packVersion ? { pack_version: p.packVersion } : {}),
        ...(p.description ? { description: p.description } : {}),
        ...(p.commands?.length ? { commands: p.commands.map((c) => c.words.join(' ')) } : {}),
        ...(p.error ? { error: p.error } : {}),
      }));
  }

  async add(body: PackAddInputBody): Promise<{ created: boolean; pack: PackAddResponseBody }> {
    let source;
    try {
      source = parsePackSource(body.source, this.city.root);
    } catch (err) {
      if (err instanceof PackSourceError) throw invalid('body.source', err.message, body.source);
      throw err;
    }
    const name = body.name ?? bindingFor(source, body.source);
    if (!BINDING_PATTERN.test(name)) {
      throw invalid(
        body.name ? 'body.name' : 'body.source',
        `the binding ${JSON.stringify(name)} must match ${BINDING_PATTERN.source}`,
        name,
      );
    }
    const existing = this.city.composed.packs.find((p) => p.direct && p.binding === name);
    if (existing) {
      if (existing.source === body.source && (existing.version ?? '') === (body.version ?? '') && !existing.error) {
        return { created: false, pack: this.response(name) };
      }
      throw new Problem(
        'conflict-wrong-state',
        `conflict: pack ${name} is already imported from ${existing.source}; remove it first or pick another name`,
      );
    }
    try {
      await checkSourceAllowed(source, this.policy());
    } catch (err) {
      if (err instanceof PackSourceError) throw invalid('body.source', `refused: ${err.message}`, body.source);
      throw err;
    }
    const lockBefore = readPackLock(this.city.root);
    const lock = { ...lockBefore };
    let dir: string;
    if (source.kind === 'local') {
      dir = source.dir;
    } else {
      dir = await this.fetch(source, body.version, body.source, name, lock, 1);
    }
    try {
      readPackFile(dir, `pack:${name}/pack.toml`);
      agentDirectories(dir, `pack:${name}/`);
    } catch (err) {
      if (err instanceof ConfigError)
        throw invalid('body.source', `the pack is not valid: ${err.message}`, body.source);
      throw err;
    }
    if (source.kind === 'local' && !readPackFile(dir, 'pack.toml').name && agentDirectories(dir, '').length === 0) {
      throw invalid('body.source', `${dir} is not a pack: it has no pack.toml and no agents/`, body.source);
    }
    const table: Record<string, TableValue> = {
      source: body.source,
      ...(body.version ? { version: body.version } : {}),
    };
    if (source.kind === 'git') writePackLock(this.city.root, lock);
    try {
      editConfigFile(
        this.city,
        'city.toml',
        (text) => appendPlainTable(text, `imports.${name}`, table),
        (composed) => {
          const added = composed.packs.find((p) => p.direct && p.binding === name);
          const broken = composed.packs.find(
            (p) => (p.binding === name || p.binding.startsWith(`${name}.`)) && p.error,
          );
          if (broken) throw invalid('body.source', `pack ${broken.binding}: ${broken.error}`, body.source);
          if (!added) throw new Problem('internal', `internal: the import of ${name} did not compose`);
        },
      );
    } catch (err) {
      if (source.kind === 'git') writePackLock(this.city.root, lockBefore);
      throw err;
    }
    return { created: true, pack: this.response(name) };
  }

  remove(name: string): void {
    const pack = this.city.composed.packs.find((p) => p.direct && p.binding === name);
    if (!pack) throw new Problem('pack-not-found', `not_found: the city imports no pack named ${name}`);
    const file = pack.file === 'pack.toml' ? 'pack.toml' : 'city.toml';
    // The lock loses the pack first, so the edit composes the city once, as it will be.
    const lock = readPackLock(this.city.root);
    const kept = Object.fromEntries(Object.entries(lock).filter(([b]) => b !== name && !b.startsWith(`${name}.`)));
    const pruned = Object.keys(kept).length !== Object.keys(lock).length;
    if (pruned) writePackLock(this.city.root, kept);
    try {
      editConfigFile(this.city, file, (text) => removePlainTable(text, `imports.${name}`));
    } catch (err) {
      if (pruned) writePackLock(this.city.root, lock);
      throw err;
    }
  }

  /** Fetches a git pack and the git packs it imports, recording each in `lock` under its binding path. */
  private async fetch(
    source: ReturnType<typeof parsePackSource> & { kind: 'git' },
    version: string | undefined,
    raw: string,
    binding: string,
    lock: Record<string, PackLockEntry>,
    depth: number,
  ): Promise<string> {
    let fetched;
    try {
      fetched = await fetchPack(packCacheRoot(), source, version);
    } catch (err) {
      if (!(err instanceof PackFetchError)) throw err;
      if (CREDENTIALS.test(err.message)) {
        throw new Problem(
          'pack-credential-required',
          `conflict: ${source.url} needs credentials this machine's git does not have: ${err.message}`,
        );
      }
      throw new Problem('pack-fetch-failed', `bad_gateway: ${err.message}`);
    }
    lock[binding] = {
      source: raw,
      commit: fetched.commit,
      fetched_at: new Date().toISOString(),
      ...(version !== undefined ? { version } : {}),
    };
    if (depth >= 8) return fetched.dir;
    let inner: PackImport[];
    try {
      inner = readPackFile(fetched.dir, `pack:${binding}/pack.toml`).imports;
    } catch {
      return fetched.dir; // reported by the caller's check of the pack
    }
    for (const imp of inner) {
      const innerSource = parsePackSource(imp.source, fetched.dir);
      if (innerSource.kind !== 'git') continue;
      await checkSourceAllowed(innerSource, this.policy()).catch((err: unknown) => {
        if (err instanceof PackSourceError)
          throw invalid('body.source', `pack ${binding}.${imp.binding} refused: ${err.message}`, raw);
        throw err;
      });
      await this.fetch(innerSource, imp.version, imp.source, `${binding}.${imp.binding}`, lock, depth + 1);
    }
    return fetched.dir;
  }

  private response(name: string): PackAddResponseBody {
    const pack = this.city.composed.packs.find((p) => p.direct && p.binding === name)!;
    return {
      name,
      source: pack.source,
      git_backed: pack.gitBacked,
      agents: this.agentsOf(name),
      ...(pack.version !== undefined ? { version: pack.version } : {}),
      ...(pack.commit ? { commit: pack.commit } : {}),
    };
  }

  private agentsOf(binding: string): string[] {
    return this.city.agents
      .filter((a) => a.config.pack === binding || a.config.pack?.startsWith(`${binding}.`))
      .map((a) => a.name);
  }

  private policy(): PackSourcePolicy {
    return machineSourcePolicy();
  }
}

function invalid(location: string, message: string, value?: unknown): Problem {
  return new Problem('validation-failed', `invalid: ${message}`, {
    errors: [{ location, message, ...(value !== undefined ? { value } : {}) }],
  });
}
