import type { TableSpec } from './key-audit.js';

/**
 * The tables ctl reads, key by key, against the reference's configuration schema: what ctl acts on, and what the
 * reference defines that ctl knows but does not do, each with why. `auditKeys` walks a file against these. When
 * ctl starts acting on a key, it moves from `unsupported` to `keys`.
 */

const OPEN: TableSpec = { keys: {}, open: true };

const SESSIONS_HERE =
  'sessions run on this machine or on [[host]] machines over OpenSSH; Kubernetes is not built until a cluster can be tested here';

/** `[[host]]`: a machine sessions run on over OpenSSH (controller/hosts/host-config.ts checks the values). */
const HOST: TableSpec = {
  keys: {
    name: true,
    address: true,
    identity_file: true,
    known_hosts: true,
    slots: true,
    labels: true,
    work_root: true,
  },
};

/**
 * Keys of the reference's `[providers.<name>]` that ctl's providers do not have: the provider's parser passes over
 * them (any other unknown key there is still an error) and the audit names them.
 */
export const REFERENCE_ONLY_PROVIDER_KEYS: Record<string, string> = {
  emits_permission_warning: 'permission requests are read from the provider’s protocol',
  instructions_file: 'an agent’s prompt is its system prompt through system_prompt_args, else its first turn',
  options_schema: 'a provider’s options are those of the built-in preset it is based on',
  path_check: 'a provider is checked by running its command’s program (ctl doctor)',
  print_args: 'one-shot runs use the provider’s args',
  resume_command: 'sessions resume with resume_args',
  resume_flag: 'sessions resume with resume_args',
  resume_style: 'sessions resume with resume_args',
  session_id_flag: 'sessions resume with resume_args',
  supports_acp: 'a provider speaks ACP when protocol = "acp"',
  supports_hooks: 'priming hooks go in a per-session settings file through settings_args',
  title_model: 'sessions are titled by their agent and bead',
};

/** `[providers.<name>]`: its settings are checked by the provider's parser (resolve.ts). */
const PROVIDER: TableSpec = {
  keys: Object.fromEntries(
    [
      'base',
      'display_name',
      'command',
      'prompt_flag',
      'ready_prompt_prefix',
      'screen_rules',
      'pending_pattern',
      'default_permission_mode',
      'args',
      'args_append',
      'resume_args',
      'system_prompt_args',
      'settings_args',
      'process_names',
      'env',
      'option_defaults',
      'permission_modes',
      'protocol',
      'runtime',
      'prompt_mode',
      'quiet_ms',
      'ready_delay_ms',
    ].map((k) => [k, true as const]),
  ),
  unsupported: REFERENCE_ONLY_PROVIDER_KEYS,
};

/** `[imports.<binding>]`, `[defaults.rig.imports.<binding>]`, `[rigs.imports.<binding>]`. */
const IMPORT: TableSpec = {
  keys: { source: true, version: true, export: true, transitive: true },
  unsupported: {
    shadow: 'a name two layers both define is an error, never shadowed',
  },
};

/** `[[agent]]` of `city.toml` or `pack.toml`, and an `agents/<name>/agent.toml`. */
export const AGENT_TABLE: TableSpec = {
  keys: {
    name: true,
    dir: true,
    env: OPEN,
    option_defaults: OPEN,
    depends_on: true,
    min_active_sessions: true,
    max_active_sessions: true,
    suspended: true,
    provider: true,
    work_dir: true,
    scope: true,
    description: true,
    prompt: true,
    scale_check: true,
    work_query: true,
    default_sling_formula: true,
    idle_timeout: true,
    isolation: true,
    merge: true,
    base_branch: true,
    pre_start: true,
    session_setup: true,
    session_setup_script: true,
    nudge: true,
    wake_mode: true,
    sleep_after_idle: true,
    max_session_age: true,
    max_session_age_jitter: true,
    drain_timeout: true,
    overlay_dir: true,
    inject_fragments: true,
    append_fragments: true,
    fallback: true,
    hosts: true,
  },
  unsupported: {
    args: 'a session’s arguments are its provider’s ([providers.<name>] args)',
    start_command: 'a session starts its provider’s command ([providers.<name>] command)',
    resume_command: 'sessions resume as their provider says',
    prompt_flag: 'set it on the provider ([providers.<name>] prompt_flag)',
    prompt_mode: 'set it on the provider ([providers.<name>] prompt_mode)',
    ready_delay_ms: 'set it on the provider ([providers.<name>] ready_delay_ms)',
    ready_prompt_prefix: 'set it on the provider ([providers.<name>] ready_prompt_prefix)',
    process_names: 'set it on the provider ([providers.<name>] process_names)',
    emits_permission_warning: 'permission requests are read from the provider’s protocol',
    prompt_template: 'the prompt is `prompt`, or the agent directory’s prompt.md / prompt.template.md',
    inject_assigned_skills: 'skills are not installed into sessions',
    skills: 'skills are not installed into sessions',
    mcp: 'MCP servers are not configured for sessions',
    install_agent_hooks: 'provider hooks are not installed; sessions report through their protocol',
    hooks_installed: 'provider hooks are not installed; sessions report through their protocol',
    session_live: 'session_setup runs after each start; nothing is re-applied while a session lives',
    session: 'a session’s runtime comes from its provider',
    lifecycle: 'a session is not one-shot: it runs until its agent’s idle_timeout',
    namepool: 'sessions are named by their agent and bead prefix',
    sling_query: 'sling routes by the agent name',
    on_boot: 'nothing runs when the city boots',
    on_death: 'nothing runs when a session dies; the tick restarts it',
    attach: 'sessions are reached through the API (ctl session attach)',
  },
};

/** `[[webhook]]` of `city.toml` (controller/webhooks/webhook-config.ts checks the values). */
const WEBHOOK: TableSpec = {
  keys: {
    name: true,
    scope: true,
    rig: true,
    max_per_minute: true,
    verify: {
      keys: {
        scheme: true,
        secret_env: true,
        signature_header: true,
        event_header: true,
        dedup_header: true,
        timestamp_header: true,
        replay_window: true,
        bearer_env: true,
        allowed_cidrs: true,
      },
      unsupported: {
        secret_key: 'a webhook has one secret, in secret_env',
        issuer: 'a jwt-jwks webhook’s trust anchor is its [[webhooks.jwt_policy]]',
        audience: 'a jwt-jwks webhook’s trust anchor is its [[webhooks.jwt_policy]]',
        jwks_url: 'a jwt-jwks webhook’s trust anchor is its [[webhooks.jwt_policy]]',
      },
    },
    rule: { keys: { event: true, match: OPEN, order: true, rig: true, target: true, args: OPEN } },
  },
  unsupported: {
    publication: 'a webhook takes deliveries wherever the supervisor is reached; narrow them with verify.allowed_cidrs',
  },
};

const ORDER_OVERRIDE: TableSpec = {
  keys: {
    name: true,
    rig: true,
    enabled: true,
    // The rest are an order's own keys, checked by the order's parser when it is laid over it.
    description: true,
    trigger: true,
    gate: true,
    interval: true,
    schedule: true,
    tz: true,
    check: true,
    check_timeout: true,
    on: true,
    exec: true,
    formula: true,
    pool: true,
    vars: OPEN,
    timeout: true,
    idempotent: true,
    no_work_gate: true,
    capture_output: true,
    env: OPEN,
    params: OPEN,
    scope: true,
    secret_env: true,
    signature_header: true,
  },
};

const AGENT_REFERENCE_ONLY = AGENT_TABLE.unsupported!;

/** Keys of the reference's `[[patches.agent]]` ctl does not apply: patches.ts leaves them out, the audit names them. */
export const REFERENCE_ONLY_AGENT_PATCH_KEYS: Record<string, string> = Object.fromEntries(
  [
    'attach',
    'hooks_installed',
    'inject_assigned_skills',
    'install_agent_hooks',
    'mcp',
    'prompt_template',
    'resume_command',
    'session',
    'session_live',
    'skills',
    'start_command',
  ].flatMap((k) => [
    [k, AGENT_REFERENCE_ONLY[k]],
    [`${k}_append`, AGENT_REFERENCE_ONLY[k]],
  ]),
) as Record<string, string>;

/** Keys of the reference's `[[patches.provider]]` ctl does not apply. */
export const REFERENCE_ONLY_PROVIDER_PATCH_KEYS: Record<string, string> = {
  _replace: 'a provider patch is laid over the provider, key by key',
};

/** Why a pack overlay's `per-provider/` is not laid down (its files are the reference's provider hooks). */
export const PER_PROVIDER_OVERLAY =
  'its files are provider hooks, which are not installed (sessions report through their protocol); the rest of the overlay is laid into the work directory';

const PATCHES: TableSpec = {
  // The values are checked where each patch is applied (patches.ts), naming the patch.
  keys: {
    agent: {
      keys: {
        name: true,
        dir: true,
        ...Object.fromEntries(
          Object.keys(AGENT_TABLE.keys)
            // Which definition of a name wins is the definition's to say, not a patch's.
            .filter((k) => k !== 'name' && k !== 'dir' && k !== 'fallback')
            .map((k) => [k, true as const]),
        ),
        inject_fragments_append: true,
        pre_start_append: true,
        session_setup_append: true,
        env_remove: true,
        pool: {
          keys: { min: true, max: true, check: true, drain_timeout: true },
          unsupported: { on_death: AGENT_REFERENCE_ONLY.on_death!, on_boot: AGENT_REFERENCE_ONLY.on_boot! },
        },
      },
      unsupported: REFERENCE_ONLY_AGENT_PATCH_KEYS,
    },
    provider: {
      keys: { name: true, env_remove: true, ...PROVIDER.keys },
      unsupported: REFERENCE_ONLY_PROVIDER_PATCH_KEYS,
    },
    rig: { keys: { name: true, path: true, prefix: true, default_branch: true, suspended: true } },
  },
  unsupported: { providers: 'provider patches are [[patches.provider]]', rigs: 'rig patches are [[patches.rig]]' },
};

/** `[[rigs.overrides]]` and `[[rigs.patches]]`: an agent patch naming its agent by `agent`, in the rig. */
const RIG_OVERRIDE: TableSpec = {
  keys: {
    agent: true,
    ...Object.fromEntries(
      Object.entries((PATCHES.keys.agent as TableSpec).keys).filter(([k]) => k !== 'name' && k !== 'dir'),
    ),
  },
  unsupported: {
    ...REFERENCE_ONLY_AGENT_PATCH_KEYS,
    dir: 'a rig’s override changes its agent in that rig; it does not move it',
  },
};

const SERVICE: TableSpec = {
  keys: {
    name: true,
    url: true,
    command: true,
    env: OPEN,
    port: true,
    socket: true,
    health: true,
    dir: true,
    health_interval: true,
  },
  unsupported: {
    kind: 'a service is a program (command) or a URL (url)',
    process: 'a program service is `command`, `port` or `socket`, `health`',
    publication: 'services are published under svc/<name> of the city only',
    publish_mode: 'services are published under svc/<name> of the city only',
    state_root: 'a program service runs in `dir`',
    workflow: 'workflow services are not run',
  },
};

/** A `city.toml`. */
export const CITY_TOML: TableSpec = {
  keys: {
    workspace: {
      keys: {
        name: true,
        provider: true,
        start_command: true,
        prefix: true,
        suspended: true,
        timezone: true,
        includes: true,
        global_fragments: true,
      },
      unsupported: {
        default_rig_includes: 'a rig’s default packs are [defaults.rig.imports.<binding>]',
        isolation: 'an agent’s own isolation = "worktree" says where it works; the city has no default',
        install_agent_hooks: 'provider hooks are not installed; sessions report through their protocol',
        max_active_sessions: 'limits are per agent (max_active_sessions in [[agent]])',
        session_template: 'sessions are named by their agent and bead prefix',
        suspended_on_start: 'the city starts as [workspace] suspended says',
        env: 'environment is per agent ([[agent]] env) or per provider',
      },
    },
    providers: { each: PROVIDER },
    agent: AGENT_TABLE,
    agent_defaults: {
      keys: Object.fromEntries(
        Object.keys(AGENT_TABLE.keys)
          .filter((k) => k !== 'name' && k !== 'dir' && k !== 'inject_fragments')
          .map((k) => [k, true]),
      ),
      unsupported: {
        ...AGENT_TABLE.unsupported,
        allow_env_override: 'an agent’s own env always wins over the defaults',
        allow_overlay: 'an agent’s overlay is its own overlay_dir',
        model: 'the model is the provider’s (its args or env)',
      },
    },
    daemon: {
      keys: {
        patrol_interval: true,
        restart_window: true,
        restart_backoff: true,
        restart_backoff_max: true,
        check_timeout: true,
        max_wakes_per_tick: true,
        max_restarts: true,
        quarantine_duration: true,
        shutdown_timeout: true,
        // The reference's switch to its second formula compiler (graph workflows): ctl has one compiler, which
        // reads both kinds of formula, so either value is what ctl does.
        formula_v2: true,
        graph_workflows: true,
      },
      unsupported: {
        drift_drain_timeout: 'a drifted session is restarted when idle, without a drain time-out',
        tick_debounce: 'the tick runs on each poke and each patrol_interval, without a debounce window',
        observe_paths: 'the configuration files are watched; nothing else is',
        probe_concurrency: 'readiness probes are not limited in number',
        wisp_gc_interval: 'closed molecules are kept in the bead store',
        wisp_ttl: 'closed molecules are kept in the bead store',
      },
    },
    rigs: {
      keys: {
        name: true,
        path: true,
        prefix: true,
        default_branch: true,
        remote: true,
        suspended: true,
        suspended_on_start: true,
        imports: { each: IMPORT },
        formula_vars: OPEN,
        includes: true,
        overrides: RIG_OVERRIDE,
        patches: RIG_OVERRIDE,
      },
      unsupported: {
        formulas_dir: 'formulas are read from the city’s and its packs’ formulas/',
        max_active_sessions: 'limits are per agent (max_active_sessions)',
        default_sling_target: 'sling names its target',
        session_sleep: 'idle sessions stop after their agent’s idle_timeout',
        dolt_host: 'the bead store is the city’s own (sqlite or journal)',
        dolt_port: 'the bead store is the city’s own (sqlite or journal)',
      },
    },
    service: SERVICE,
    host: HOST,
    orders: { keys: { skip: true, max_timeout: true, overrides: ORDER_OVERRIDE } },
    maintenance: { keys: { interval: true } },
    review: { keys: { check: true, check_timeout: true, land: true } },
    pricing: { keys: { provider: true, input: true, output: true, cache_read: true, cache_creation: true } },
    beads: {
      keys: { backend: true },
      unsupported: { provider: 'the bead store is the city’s own: [beads] backend = "sqlite" or "journal"' },
    },
    events: {
      keys: { rotation_max_bytes: true, max_archives: true },
      unsupported: { provider: 'events are the city’s .ctl/events.jsonl' },
    },
    extmsg: { keys: { allowed_callback_hosts: true } },
    webhook: WEBHOOK,
    webhooks: {
      keys: {
        jwt_policy: { keys: { name: true, issuer: true, audience: true, jwks_url: true } },
        rate_limit: {
          keys: { per_minute: true, burst: true, override: { keys: { name: true, per_minute: true, burst: true } } },
        },
      },
      unsupported: {
        allow_public: 'webhooks are declared in city.toml only, never by a pack: there is nothing to grant',
      },
    },
    imports: { each: IMPORT },
    defaults: { keys: { rig: { keys: { imports: { each: IMPORT } } } } },
    patches: PATCHES,
    session: {
      keys: { setup_timeout: true },
      unsupported: {
        provider: SESSIONS_HERE,
        k8s: SESSIONS_HERE,
        acp: 'ACP sessions take their settings from their provider',
        socket: 'the city’s tmux server is .ctl/tmux.sock',
        startup_timeout: 'session start-up is bounded by the provider’s readiness',
        nudge_lock_timeout: 'a nudge is queued as a message, delivered once the session is ready',
        nudge_ready_timeout: 'a nudge is queued as a message, delivered once the session is ready',
        nudge_retry_interval: 'a nudge is queued as a message, delivered once the session is ready',
        debounce_ms: 'messages are delivered through the session’s protocol',
        display_ms: 'messages are delivered through the session’s protocol',
        remote_match: SESSIONS_HERE,
      },
    },
  },
  unsupported: {
    api: 'where the API listens is the supervisor’s ($CTL_HOME/supervisor.toml)',
    named_session: 'sessions are kept by agents (min_active_sessions), not named sessions',
    chat_sessions: 'sessions stop after their agent’s idle_timeout',
    session_sleep: 'idle sessions stop after their agent’s idle_timeout',
    convergence: 'limits are per agent (max_active_sessions)',
    dolt: 'the bead store is the city’s own (sqlite or journal)',
    storage: 'the bead store is the city’s own (sqlite or journal)',
    formulas: 'formulas are read from formulas/ of the city and its packs',
    mail: 'mail is kept in the city’s bead store',
    packs: 'packs come in through [imports.<binding>]',
    include: 'city.toml is one file; packs come in through [imports.<binding>]',
    doctor: 'ctl doctor runs every check; packs add theirs with [[doctor]]',
    usage: 'usage is recorded from every turn',
    upstreams: 'providers are [providers.<name>]',
  },
};

/**
 * A pack's `[agent_defaults]`: the reference gives the pack's own agents (and its includes') its `provider`,
 * `default_sling_formula` and `append_fragments`; what else the table may hold is the city's to set.
 */
const CITY_AGENT_DEFAULTS = CITY_TOML.keys.agent_defaults as TableSpec;
const PACK_AGENT_DEFAULTS: TableSpec = {
  keys: { provider: true, default_sling_formula: true, append_fragments: true },
  unsupported: Object.fromEntries(
    [...Object.keys(CITY_AGENT_DEFAULTS.keys), ...Object.keys(CITY_AGENT_DEFAULTS.unsupported ?? {})]
      .filter((k) => !['provider', 'default_sling_formula', 'append_fragments'].includes(k))
      .map((k) => [
        k,
        'a pack’s [agent_defaults] gives its agents provider, default_sling_formula and append_fragments; the rest is the city’s [agent_defaults]',
      ]),
  ),
};

/** A `pack.toml`: an unknown table is a warning (a newer pack may have more), never a refusal of the pack. */
export const PACK_TOML: TableSpec = {
  lenient: true,
  keys: {
    pack: {
      keys: {
        name: true,
        version: true,
        schema: true,
        description: true,
        includes: true,
        requires: { keys: { scope: true, agent: true } },
      },
      unsupported: {
        requires_gc: 'packs are not checked against a ctl version',
      },
    },
    imports: { each: IMPORT },
    agent: AGENT_TABLE,
    providers: { each: PROVIDER },
    service: SERVICE,
    host: HOST,
    agent_defaults: PACK_AGENT_DEFAULTS,
    doctor: { keys: { name: true, script: true, description: true, timeout: true } },
    named_session: { keys: { template: true, mode: true, scope: true } },
    // A pack patches only its own agents (matched by their names in the pack); the values are checked where each
    // patch is applied (pack-patches.ts).
    patches: { keys: { agent: PATCHES.keys.agent as TableSpec } },
    commands: { keys: { name: true, description: true, long_description: true, script: true } },
  },
  unsupported: {
    global: 'a pack’s [global] holds session_live commands, and no command runs while a session lives (session_live)',
    formulas: 'formulas are read from the pack’s formulas/',
    pricing: 'a pack’s prices are not applied; the city’s [[pricing]] are',
    webhook: 'webhooks are declared in city.toml ([[webhook]]), not by packs',
  },
};

/** An `agents/<name>/agent.toml`: one agent's table at its top level. */
export const AGENT_TOML: TableSpec = AGENT_TABLE;

const STEP: TableSpec = {
  keys: {
    id: true,
    title: true,
    description: true,
    type: true,
    priority: true,
    tags: true,
    labels: true,
    metadata: OPEN,
    needs: true,
    depends_on: true,
    condition: true,
    assignee: true,
    children: true, // walked below
    loop: true, // checked by the formula's parser
    check: true,
    retry: true,
    gate: true,
    expand: true,
    expand_vars: true,
    on_complete: true, // checked by the formula's parser
    waits_for: true,
  },
  unsupported: {
    description_file: 'a step’s description is written in the formula',
    notes: 'a step has a title and a description',
    ralph: 'a step is retried with [steps.retry]',
  },
};
STEP.keys.children = STEP;

/** A formula file. */
export const FORMULA: TableSpec = {
  keys: {
    formula: true,
    description: true,
    version: true,
    vars: true, // checked by the formula's parser
    steps: STEP,
    requires: true,
    type: true,
    extends: true,
    template: STEP,
    compose: {
      keys: {
        expand: { keys: { target: true, with: true, vars: OPEN } },
        map: { keys: { select: true, with: true, vars: OPEN } },
      },
      unsupported: {
        bond_points: 'formulas are composed by expand and map rules only',
        hooks: 'formulas are composed by expand and map rules only',
        branch: 'parallel paths are steps with the same needs',
        gate: 'a wait is a step with a [steps.gate]',
        aspects: 'formulas are composed by expand and map rules only',
      },
    },
  },
  unsupported: {
    advice: 'formulas are not composed from others',
    pointcuts: 'formulas are not composed from others',
    phase: 'every run is kept in the bead store, a bead per step: there are no ephemeral (vapor) runs',
    pour: 'every run makes a bead per step',
  },
};
