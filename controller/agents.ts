import type { CityConfig } from '../shared/config/city-config.js';
import { ConfigError } from '../shared/config/config-error.js';
import { SUPPORTED_PROVIDERS } from '../shared/readiness.js';

/**
 * The `starting_agents` phase: the city's `[[agent]]` definitions must be usable before the city runs —
 * unique names, and providers that are built in or defined in `[providers]`. (This controller does not
 * run agent sessions itself yet; their processes will start here.)
 */
export function checkAgents(config: CityConfig, configPath: string): void {
  const seen = new Set<string>();
  for (const agent of config.agents) {
    if (seen.has(agent.name)) throw new ConfigError(`${configPath}: agent ${agent.name} is defined twice`);
    seen.add(agent.name);
    const provider = agent.provider ?? config.workspace.provider;
    if (provider !== undefined && !SUPPORTED_PROVIDERS.includes(provider) && !(provider in config.providers)) {
      throw new ConfigError(
        `${configPath}: agent ${agent.name} uses provider ${provider}, which is neither built in nor defined in [providers]`,
      );
    }
  }
}
