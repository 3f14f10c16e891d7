import { isAbsolute, join } from 'node:path';
import type { Bead } from '../../shared/dto/beads.js';
import type { CityRigConfig } from '../../shared/config/city-config.js';
import type { AgentDefinition } from '../agent-catalog/agent-catalog.js';
import { repositoryOf } from '../worktrees/repository.js';
import { defaultBranch } from '../worktrees/session-worktrees.js';
import { GitError } from '../worktrees/git.js';
import type { BuiltinVar } from './formula-compile.js';

/** What the run's own vars are made from: the city's rigs and agents, its beads, its clock. */
export interface RunVarsHost {
  root: string;
  rigs: () => CityRigConfig[];
  /** The city's time zone (`[workspace] timezone`), for `date`. */
  timezone: () => string | undefined;
  agent: (name: string) => AgentDefinition | undefined;
  bead: (id: string) => Bead | undefined;
  /** Beads that depend on this one (a convoy tracking it is one). */
  dependents: (id: string) => Bead[];
  now: () => number;
  /** The default branch of the git repository a directory is in (undefined when none, or it has none). */
  defaultBranch?: (dir: string) => Promise<string | undefined>;
}

async function repositoryBranch(dir: string): Promise<string | undefined> {
  const repo = repositoryOf(dir);
  if (!repo) return undefined;
  try {
    return await defaultBranch(repo);
  } catch (err) {
    // A repository with a detached HEAD has no default branch: the var stays as written, as the reference's.
    if (err instanceof GitError) return undefined;
    throw err;
  }
}

/** Who a run is for: its target agent, the bead it was started for, the convoy tracking that bead. */
export interface RunLaunch {
  target?: string;
  attachedBeadId?: string;
  convoyId?: string;
}

/** The run's own values, and the vars its rig sets for formulas (`[[rigs]] formula_vars`). */
export interface RunValues {
  builtins: Partial<Record<BuiltinVar, string>>;
  rigVars: Record<string, string>;
}

/**
 * The builtin vars of a run, with the values the reference gives them: the attached bead (`attached_bead_id`,
 * `issue`), the convoy tracking it (the one the launch made, else an open one), the target agent, its rig
 * (`rig_name`, '' for an agent of the city) and pack binding (`binding_name`, `binding_prefix` = `binding.`),
 * the branch (`base_branch` = `target_branch`: the bead's `target` metadata, else its rig's `default_branch`,
 * else the agent's `base_branch`, else its rig's, else the default branch of the repository it works in) and
 * today's date (`YYYY-MM-DD` in the city's time zone). What a run cannot know (no bead, no agent, no git
 * repository) it does not set: the text keeps `{{name}}` as written.
 */
export class RunVars {
  constructor(private readonly host: RunVarsHost) {}

  async of(launch: RunLaunch): Promise<RunValues> {
    const builtins: RunValues['builtins'] = { date: this.today() };
    const agent = launch.target ? this.host.agent(launch.target) : undefined;
    const bead = launch.attachedBeadId ? this.host.bead(launch.attachedBeadId) : undefined;
    if (launch.attachedBeadId) {
      builtins.attached_bead_id = launch.attachedBeadId;
      builtins.issue = launch.attachedBeadId;
      const convoy =
        launch.convoyId ??
        this.host
          .dependents(launch.attachedBeadId)
          .find(
            (b) =>
              b.issue_type === 'convoy' &&
              b.status !== 'closed' &&
              b.dependencies?.some((d) => d.depends_on_id === launch.attachedBeadId && d.type === 'tracks'),
          )?.id;
      if (convoy) builtins.convoy_id = convoy;
    } else if (launch.convoyId) builtins.convoy_id = launch.convoyId;
    if (launch.target) builtins.target = launch.target;
    const rigs = this.host.rigs();
    const agentRig = agent?.rig ? rigs.find((r) => r.name === agent.rig) : undefined;
    if (agent) {
      builtins.rig_name = agent.rig ?? '';
      builtins.binding_name = agent.config.pack ?? '';
      builtins.binding_prefix = agent.config.pack ? `${agent.config.pack}.` : '';
    }
    const branch = await this.branch(bead, agent, agentRig, rigs);
    if (branch) {
      builtins.base_branch = branch;
      builtins.target_branch = branch;
    }
    return { builtins, rigVars: { ...(agentRig?.formula_vars ?? {}) } };
  }

  private async branch(
    bead: Bead | undefined,
    agent: AgentDefinition | undefined,
    agentRig: CityRigConfig | undefined,
    rigs: CityRigConfig[],
  ): Promise<string | undefined> {
    const own = bead?.metadata?.target;
    if (typeof own === 'string' && own.trim()) return own.trim();
    const prefix = bead ? /^(.+)-[^-]+$/.exec(bead.id)?.[1] : undefined;
    const beadRig = prefix ? rigs.find((r) => r.prefix === prefix) : undefined;
    const configured = beadRig?.default_branch ?? agent?.config.base_branch ?? agentRig?.default_branch;
    if (configured) return configured;
    const rigDir = agentRig?.path
      ? isAbsolute(agentRig.path)
        ? agentRig.path
        : join(this.host.root, agentRig.path)
      : undefined;
    return (this.host.defaultBranch ?? repositoryBranch)(
      agent?.worktree?.repo ?? rigDir ?? agent?.workDir ?? this.host.root,
    );
  }

  private today(): string {
    const zone = this.host.timezone();
    const format = (timeZone?: string) =>
      new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(
        this.host.now(),
      );
    try {
      return format(zone);
    } catch {
      // An unknown zone is refused when the config loads; the machine's own is the fallback here.
      return format();
    }
  }
}
