// Patches: `[[patches.agent|provider|rig]]` of `city.toml`. Their records use the reference's PascalCase keys
// (mirroring the config fields they change); a key a patch does not set is null.

/** One `[[patches.agent]]`. */
export interface AgentPatch {
  Name: string;
  /** The rig of the agent it changes (`dir/name`). */
  Dir: string;
  Provider: string | null;
  Scope: string | null;
  Suspended: boolean | null;
  WorkDir: string | null;
  Env: { [key: string]: string };
  Description: string | null;
  Prompt: string | null;
  /** @isInt */
  MinActiveSessions: number | null;
  /** @isInt */
  MaxActiveSessions: number | null;
  ScaleCheck: string | null;
  WorkQuery: string | null;
  IdleTimeout: string | null;
  DependsOn: string[] | null;
  DefaultSlingFormula: string | null;
}

/** Body of `PUT /patches/agents`: the patch for one agent, replacing any it had. */
export interface AgentPatchSetInputBody {
  /** The agent's name (`base` or `binding.base`). */
  name: string;
  /** Its rig, for a rig's agent. */
  dir?: string;
  provider?: string;
  scope?: string;
  suspended?: boolean;
  work_dir?: string;
  env?: { [key: string]: string };
  description?: string;
  prompt?: string;
  /** @isInt @minimum 0 */
  min_active_sessions?: number;
  /** @isInt @minimum 1 */
  max_active_sessions?: number;
  scale_check?: string;
  work_query?: string;
  /** A duration (`10m`). */
  idle_timeout?: string;
  depends_on?: string[];
  default_sling_formula?: string;
}

/** One `[[patches.provider]]`. */
export interface ProviderPatch {
  Name: string;
  Base: string | null;
  Command: string | null;
  Args: string[] | null;
  ArgsAppend: string[] | null;
  PromptMode: string | null;
  PromptFlag: string | null;
  /** @isInt */
  ReadyDelayMs: number | null;
  Env: { [key: string]: string };
}

/** Body of `PUT /patches/providers`. */
export interface ProviderPatchSetInputBody {
  name: string;
  command?: string;
  args?: string[];
  args_append?: string[];
  prompt_mode?: 'stdin' | 'arg' | 'flag';
  prompt_flag?: string;
  /** @isInt @minimum 0 */
  ready_delay_ms?: number;
  env?: { [key: string]: string };
}

/** One `[[patches.rig]]`. */
export interface RigPatch {
  Name: string;
  Path: string | null;
  Prefix: string | null;
  DefaultBranch: string | null;
  Suspended: boolean | null;
}

/** Body of `PUT /patches/rigs`. */
export interface RigPatchSetInputBody {
  name: string;
  path?: string;
  prefix?: string;
  default_branch?: string;
  suspended?: boolean;
}

export interface ListBodyAgentPatch {
  items: AgentPatch[];
  /** @isInt */
  total: number;
  /** The cursor of the next page, when there is one. */
  next_cursor?: string;
}

export interface ListBodyProviderPatch {
  items: ProviderPatch[];
  /** @isInt */
  total: number;
  /** The cursor of the next page, when there is one. */
  next_cursor?: string;
}

export interface ListBodyRigPatch {
  items: RigPatch[];
  /** @isInt */
  total: number;
  /** The cursor of the next page, when there is one. */
  next_cursor?: string;
}

/** Body of a `PUT /patches/…`: which patch was written. */
export interface PatchOKResponseBody {
  status: 'ok';
  agent_patch?: string;
  provider_patch?: string;
  rig_patch?: string;
}

/** Body of a `DELETE /patches/…`. */
export interface PatchDeletedResponseBody {
  status: 'deleted';
  agent_patch?: string;
  provider_patch?: string;
  rig_patch?: string;
}
