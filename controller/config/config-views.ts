import { webhookWarnings } from '../webhooks/webhook-checks.js';
import type {
  AnnotatedAgentResponse,
  AnnotatedProviderResponse,
  ConfigIssue,
  ConfigPack,
  ConfigResponse,
  ConfigValidateOutputBody,
} from '../../shared/dto/config.js';
import type { CityConfig } from '../../shared/config/city-config.js';
import { beadPrefix } from '../beads/prefix.js';
import type { FormulaCatalog } from '../formulas/formula-catalog.js';
import type { AgentDefinition } from '../agent-catalog/agent-catalog.js';
import type { OrderCatalog } from '../orders/order-catalog.js';
import type { ProviderRegistry } from '../providers/provider-registry.js';
import type { ConfigErrorPlace } from '../../shared/config/config-error.js';
import { PRESETS } from '../providers/presets.js';
import { resolveProviders } from '../providers/resolve.js';
import type { ResolvedProvider } from '../providers/provider-spec.js';
import type { ComposedPack } from '../packs/composed-pack.js';
import type { ComposedConfig } from './compose.js';

/** What the configuration views read of the city: the configuration in use, how it composed, what it holds. */
export interface ConfigViewsHost {
  readonly config: CityConfig;
  readonly composed: ComposedConfig;
  readonly agents: AgentDefinition[];
  readonly reloadError: string | undefined;
  readonly reloadErrorPlace: ConfigErrorPlace | undefined;
  providers: Pick<ProviderRegistry, 'all'>;
  orders: Pick<OrderCatalog, 'list'>;
  formulas: Pick<FormulaCatalog, 'list' | 'skipped'>;
}

/** `GET /config`: the configuration as composed and in use (packs, defaults and patches applied). */
export function configView(city: ConfigViewsHost, cityName: string): ConfigResponse {
  const { config } = city;
  const workspace: ConfigResponse['workspace'] = {
    name: cityName,
    suspended: config.workspace.suspended,
    prefix: beadPrefix(cityName, config.workspace.prefix),
  };
  if (config.workspace.name !== undefined) workspace.declared_name = config.workspace.name;
  if (config.workspace.provider !== undefined) workspace.provider = config.workspace.provider;
  if (config.workspace.startCommand !== undefined) workspace.start_command = config.workspace.startCommand;
  return {
    workspace,
    agents: city.agents.map(({ config: a, isPool, name }) => ({
      name,
      suspended: a.suspended,
      is_pool: isPool,
      source: a.source,
      origin: a.origin ?? 'inline',
      ...(a.pack ? { pack: a.pack } : {}),
      ...(a.dir ? { dir: a.dir } : {}),
      ...(a.provider ? { provider: a.provider } : {}),
      ...(a.scope ? { scope: a.scope } : {}),
    })),
    rigs: config.rigs.map((r) => ({
      name: r.name,
      suspended: r.suspended,
      ...(r.path ? { path: r.path } : {}),
      ...(r.prefix ? { prefix: r.prefix } : {}),
      ...(r.default_branch ? { default_branch: r.default_branch } : {}),
    })),
    providers: config.providers,
    services: config.services.map((s) => ({
      name: s.name,
      kind: s.command !== undefined ? ('program' as const) : ('url' as const),
      ...(s.url ? { url: s.url } : {}),
      ...(s.command ? { command: s.command } : {}),
      ...(s.pack ? { pack: s.pack } : {}),
    })),
    patches: patchCounts(config),
    packs: city.composed.packs.map(packView),
  };
}

/**
 * `GET /config/defaults`: what a city has before its files say anything — its name and the prefix derived from
 * it, every built-in provider preset, no agents, rigs, services or patches — so a client can diff `/config`
 * against it.
 */
export function defaultsView(cityName: string): ConfigResponse {
  const presets = resolveProviders({}, {}, 'defaults');
  return {
    workspace: { name: cityName, suspended: false, prefix: beadPrefix(cityName, undefined) },
    agents: [],
    rigs: [],
    providers: Object.fromEntries([...presets.values()].map((p) => [p.name, providerSpec(p)])),
    services: [],
    patches: { agent_count: 0, provider_count: 0, rig_count: 0 },
    packs: [],
  };
}

/** `GET /config/explain`: each agent and provider with its origin, what patches changed, and the imports. */
export function explainView(city: ConfigViewsHost): {
  agents: AnnotatedAgentResponse[];
  providers: Record<string, AnnotatedProviderResponse>;
  patches: { agents: number; providers: number; rigs: number };
  packs: ConfigPack[];
} {
  const { patched, packProviders, replaced } = city.composed;
  const agents = city.agents.map(({ config: a, isPool, name, providerName }) => {
    const lost = replaced.filter((r) => r.name === name);
    return {
      name,
      is_pool: isPool,
      suspended: a.suspended,
      origin: a.origin ?? ('inline' as const),
      source: a.source,
      patched: patched.agents.has(name),
      ...(a.dir ? { dir: a.dir } : {}),
      ...(providerName ? { provider: providerName } : {}),
      ...(a.scope ? { scope: a.scope } : {}),
      ...(a.pack ? { pack: a.pack } : {}),
      ...(a.fallback ? { fallback: true } : {}),
      ...(lost.length
        ? { replaced: lost.map(({ source, pack, reason }) => ({ source, ...(pack ? { pack } : {}), reason })) }
        : {}),
    };
  });
  const providers: Record<string, AnnotatedProviderResponse> = {};
  for (const p of city.providers.all()) {
    providers[p.name] = {
      ...providerSpec(p),
      origin: packProviders.has(p.name) ? 'pack-derived' : p.origin,
      patched: patched.providers.has(p.name),
    };
  }
  const counts = patchCounts(city.config);
  return {
    agents,
    providers,
    patches: { agents: counts.agent_count, providers: counts.provider_count, rigs: counts.rig_count },
    packs: city.composed.packs.map(packView),
  };
}

/**
 * `GET /config/validate`: the files as they are on disk now. `errors` when a file does not load (the last good
 * configuration stays in use meanwhile), an agent cannot run, a pack cannot be read, a patch matches nothing,
 * an order or formula does not parse — each naming its file and key; `warnings` for what runs but is likely a
 * mistake.
 */
export function validateView(city: ConfigViewsHost): ConfigValidateOutputBody {
  const errors: ConfigIssue[] = [];
  const warnings: ConfigIssue[] = [];
  const broken = city.reloadError;
  if (broken) {
    const file = /^([^:]+):/.exec(broken)?.[1] ?? 'city.toml';
    const place = city.reloadErrorPlace;
    errors.push({ file, message: `${broken} (the last good configuration is in use)`, ...place });
  }
  for (const problem of city.composed.problems) errors.push(problem);
  for (const agent of city.agents) {
    const key = `agent.${agent.name}`;
    if (!agent.available) {
      errors.push({ file: agent.config.source, key, message: `agent ${agent.name}: ${agent.unavailableReason}` });
    }
    if (agent.config.suspended)
      warnings.push({ file: agent.config.source, key, message: `agent ${agent.name} is suspended` });
    // Worktree keys without worktrees are read and not acted on: said, not dropped silently.
    if (agent.config.isolation !== 'worktree') {
      for (const unused of ['merge', 'base_branch'] as const) {
        if (agent.config[unused] === undefined) continue;
        warnings.push({
          file: agent.config.source,
          key: `${key}.${unused}`,
          message: `agent ${agent.name}: ${unused} does nothing without isolation = "worktree"`,
        });
      }
    }
  }
  for (const message of city.orders.list().errors) {
    errors.push({ file: /^([^:]+):/.exec(message)?.[1] ?? 'orders', message });
  }
  for (const formula of city.formulas.list()) {
    for (const message of formula.errors) errors.push({ file: formula.file, key: `formula.${formula.name}`, message });
  }
  warnings.push(...webhookWarnings(city.composed.webhooks.webhooks, city.orders.list().orders));
  for (const rig of city.config.rigs) {
    if (!rig.path)
      warnings.push({ file: 'city.toml', key: `rigs.${rig.name}`, message: `rig ${rig.name} has no path` });
  }
  // What the files say that ctl reads but does not act on: named, never dropped without a word.
  warnings.push(...city.composed.unsupported);
  for (const formula of city.formulas.list()) {
    for (const message of formula.warnings ?? [])
      warnings.push({ file: formula.file, key: `formula.${formula.name}`, message });
  }
  // Files a symbolic link leads out of their pack, rig or city: skipped, never read.
  warnings.push(...city.composed.skipped);
  for (const message of city.orders.list().skipped) {
    warnings.push({ file: /^([^:]+):/.exec(message)?.[1] ?? 'orders', message });
  }
  for (const { file, message } of city.formulas.skipped()) warnings.push({ file, message });
  if (city.config.workspace.suspended) {
    warnings.push({ file: 'city.toml', key: 'workspace.suspended', message: 'the city is suspended: no agent runs' });
  }
  return { valid: errors.length === 0, errors, warnings };
}

export function packView(p: ComposedPack): ConfigPack {
  return {
    binding: p.binding,
    source: p.source,
    git_backed: p.gitBacked,
    ...(p.version !== undefined ? { version: p.version } : {}),
    ...(p.commit ? { commit: p.commit } : {}),
    ...(p.error ? { error: p.error } : {}),
  };
}

function patchCounts(config: CityConfig) {
  return {
    agent_count: config.patches.agents.length,
    provider_count: config.patches.providers.length,
    rig_count: config.patches.rigs.length,
  };
}

/** A provider's settings as the API shows them. */
function providerSpec(p: ResolvedProvider): Omit<AnnotatedProviderResponse, 'origin' | 'patched'> {
  return {
    display_name: p.display_name,
    command: p.command,
    args: p.args,
    env: p.env,
    prompt_mode: p.prompt_mode,
    protocol: p.protocol,
    ready_delay_ms: p.ready_delay_ms,
    ...(p.prompt_flag ? { prompt_flag: p.prompt_flag } : {}),
  };
}

/** Whether a provider name is a built-in preset. */
export function isPreset(name: string): boolean {
  return Object.hasOwn(PRESETS, name);
}
