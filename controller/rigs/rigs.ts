import { statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { REPOSITORY_DRIVERS_QUERY, repositoryDriverOverrides } from '../git-safety.js';
import { loadSimpleGit } from '../simple-git.js';
import type { CityRigConfig } from '../../shared/config/city-config.js';
import { AGENT_NAME_PATTERN } from '../../shared/config/city-config.js';
import type { GitStatus, RigResponse, RigSessionWorktree, RigUpdateInputBody } from '../../shared/dto/rigs.js';
import { Problem } from '../../shared/http/problem.js';
import { checkRigPath } from './rig-placement.js';
import type { AgentDefinition } from '../agent-catalog/agent-catalog.js';
import { editConfigFile, type ConfigFileHost } from '../config/config-file-edit.js';
import type { SessionService } from '../sessions/session-service.js';
import {
  appendTable,
  removeTable,
  setTableKeys,
  TomlTableEditError,
  type TableValue,
} from '../config/toml-table-edit.js';

/** A git status that takes longer than this is reported as an error, not waited on. */
const GIT_TIMEOUT_MS = 5000;

/** What the rigs API needs of the city: its configuration (to read and edit), its agents and their sessions. */
export interface RigsHost extends ConfigFileHost {
  readonly agents: AgentDefinition[];
  sessions: Pick<SessionService, 'agentSessions' | 'worktrees'>;
}

/** A rig by name, or the 404 problem. */
export function rigOrProblem(city: Pick<RigsHost, 'config'>, name: string): CityRigConfig {
  const rig = city.config.rigs.find((r) => r.name === name);
  if (!rig) throw new Problem('rig-not-found', `not_found: rig not found: ${name}`);
  return rig;
}

export function rigPath(city: Pick<RigsHost, 'root'>, rig: CityRigConfig): string {
  const path = rig.path ?? rig.name;
  return isAbsolute(path) ? path : resolve(city.root, path);
}

/** A rig as the API shows it; with `git`, its working tree read with the machine's git. */
export async function rigResponse(city: RigsHost, rig: CityRigConfig, git: boolean): Promise<RigResponse> {
  const path = rigPath(city, rig);
  const agents = city.agents.filter((a) => a.rig === rig.name);
  const running = agents.filter((a) => city.sessions.agentSessions(a.name).some((s) => s.running)).length;
  return {
    name: rig.name,
    path,
    suspended: rig.suspended,
    agent_count: agents.length,
    running_count: running,
    ...(rig.prefix ? { prefix: rig.prefix } : {}),
    ...(rig.default_branch ? { default_branch: rig.default_branch } : {}),
    present: isDirectory(path),
    ...(git ? await gitViews(city, path, agents) : {}),
  };
}

/** With `git=true`: the rig's working tree, and each of its agents' open sessions' worktrees, read at once. */
async function gitViews(
  city: RigsHost,
  path: string,
  agents: AgentDefinition[],
): Promise<Pick<RigResponse, 'git' | 'worktrees'>> {
  const sessions = agents.flatMap((a) => city.sessions.agentSessions(a.name)).filter((s) => s.record.worktree);
  const [status, ...worktrees] = await Promise.all([
    gitStatus(path),
    ...sessions.map(async (s): Promise<RigSessionWorktree | undefined> => {
      const view = await city.sessions.worktrees.view(s.record, true);
      return view && { session_id: s.id, session_name: s.record.session_name, agent: s.record.template, ...view };
    }),
  ]);
  const found = worktrees.filter((w): w is RigSessionWorktree => w !== undefined);
  return { git: status, ...(found.length ? { worktrees: found } : {}) };
}

/** `git status` of a directory: branch, head, upstream distance, changed files; an error instead of failing. */
export async function gitStatus(path: string): Promise<GitStatus> {
  const empty = { clean: false, ahead: 0, behind: 0, changed_files: [] };
  if (!isDirectory(path)) return { ...empty, error: `${path} is not a directory` };
  try {
    const simpleGit = await loadSimpleGit();
    const timeout = { block: GIT_TIMEOUT_MS };
    // `status` runs the clean filters of files whose stat changed: none of the rig's own (git-safety.ts).
    const drivers = await simpleGit({ baseDir: path, timeout })
      .raw(REPOSITORY_DRIVERS_QUERY)
      .catch(() => '');
    const repo = simpleGit({ baseDir: path, timeout, config: repositoryDriverOverrides(drivers) });
    const status = await repo.status();
    const head = await repo.revparse(['HEAD']).catch(() => undefined);
    return {
      ...(status.current && !status.detached ? { branch: status.current } : {}),
      ...(head ? { head: head.trim() } : {}),
      clean: status.isClean(),
      ahead: status.ahead,
      behind: status.behind,
      ...(status.tracking ? { upstream: status.tracking } : {}),
      changed_files: status.files.map((f) => f.path),
    };
  } catch (err) {
    const message = (err as Error).message.split('\n').find((l) => l.trim()) ?? 'git failed';
    return { ...empty, error: message.replace(/^fatal: /, '') };
  }
}

/**
 * The rigs API's writes to `city.toml`: a `[[rigs]]` table added, edited or removed surgically (the rest of the
 * file as it was), checked by parsing the result, written atomically, then taken by the controller at once.
 */
export class RigEditor {
  constructor(private readonly city: ConfigFileHost) {}

  /** Checks a new rig's name: valid and free. */
  checkNew(name: string): void {
    if (!AGENT_NAME_PATTERN.test(name)) invalid('name', 'a rig name is letters, digits, ., _ and -', name);
    if (this.city.config.rigs.some((r) => r.name === name)) {
      throw new Problem('conflict-wrong-state', `conflict: rig ${name} already exists`);
    }
  }

  /** Adds a rig for an existing directory. */
  async add(body: { name: string; path: string; prefix?: string; default_branch?: string }): Promise<CityRigConfig> {
    this.checkNew(body.name);
    const path = await this.checkedPath(body.path);
    this.checkNew(body.name);
    if (body.prefix) checkPrefix(body.prefix);
    const fields: Record<string, TableValue> = { name: body.name, path };
    if (body.prefix) fields.prefix = body.prefix;
    if (body.default_branch) fields.default_branch = body.default_branch;
    this.write((text) => appendTable(text, 'rigs', fields));
    return rigOrProblem(this.city, body.name);
  }

  async update(name: string, body: RigUpdateInputBody): Promise<CityRigConfig> {
    this.indexOf(name);
    const keys: Record<string, TableValue | undefined> = {};
    if (body.path !== undefined) keys.path = await this.checkedPath(body.path);
    const index = this.indexOf(name);
    if (body.prefix) checkPrefix(body.prefix);
    if (body.prefix !== undefined) keys.prefix = body.prefix || undefined;
    if (body.default_branch !== undefined) keys.default_branch = body.default_branch || undefined;
    if (body.suspended !== undefined) {
      keys.suspended = body.suspended ? true : undefined;
      // Resuming clears the reference's spelling too, or the rig would stay suspended.
      if (!body.suspended) keys.suspended_on_start = undefined;
    }
    if (Object.keys(keys).length) this.write((text) => setTableKeys(text, 'rigs', index, keys));
    return rigOrProblem(this.city, name);
  }

  remove(name: string): void {
    const index = this.indexOf(name);
    this.write((text) => removeTable(text, 'rigs', index));
  }

  /** The rig's place among the `[[rigs]]` tables of `city.toml`. */
  private indexOf(name: string): number {
    rigOrProblem(this.city, name);
    return this.city.config.rigs.findIndex((r) => r.name === name);
  }

  /**
   * The path as it is written: kept as given (relative to the city, or absolute); it must be an existing directory
   * where a rig may be (`checkRigPath`: the placement rules).
   */
  private async checkedPath(path: string): Promise<string> {
    if (path.trim() === '') invalid('path', 'path is required (an existing directory)', path);
    await checkRigPath(path, this.city.root, { mustExist: true });
    return path;
  }

  /** Through the city's one edit funnel: checked, composed once, written atomically, taken. */
  private write(edit: (text: string) => string): void {
    editConfigFile(this.city, 'city.toml', (text) => {
      try {
        return edit(text);
      } catch (err) {
        if (!(err instanceof TomlTableEditError)) throw err;
        throw new Problem('conflict-wrong-state', `conflict: city.toml could not be edited safely: ${err.message}`);
      }
    });
  }
}

/** A prefix begins the ids of the rig's beads (`web-42`): letters, digits, `.`, `_` and `-`. */
function checkPrefix(prefix: string): void {
  if (!AGENT_NAME_PATTERN.test(prefix)) invalid('prefix', 'a prefix is letters, digits, ., _ and -', prefix);
}

function invalid(field: string, message: string, value: string): never {
  throw new Problem('validation-failed', `invalid: ${message}`, {
    errors: [{ location: `body.${field}`, message, value }],
  });
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
