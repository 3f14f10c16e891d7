import type { CityConfig } from '../shared/config/city-config.js';
import { ConfigError } from '../shared/config/config-error.js';
import type { ProviderRegistry } from './providers/provider-registry.js';

/**
 * The `starting_agents` phase: the city's `[[agent]]` definitions must be usable before the city runs — unique
 * names, and providers the city has (built in, or defined in `[providers]`).
 */
export function checkAgents(config: CityConfig, configPath: string, providers: ProviderRegistry): void {
  const seen = new Set<string>();
  for (const agent of config.agents) {
    if (seen.has(agent.name)) throw new ConfigError(`${configPath}: agent ${agent.name} is defined twice`);
    seen.add(agent.name);
    const provider = agent.provider ?? providers.defaultProvider();
    if (provider !== undefined && !providers.get(provider)) {
      throw new ConfigError(
        `${configPath}: agent ${agent.name} uses provider ${provider}, which is neither built in nor defined in [providers]`,
      );
    }
  }
}
