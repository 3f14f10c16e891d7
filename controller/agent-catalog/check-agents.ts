import type { CityConfig } from '../../shared/config/city-config.js';
import { qualifiedName } from './agent-catalog.js';
import { ConfigError } from '../../shared/config/config-error.js';

/**
 * What makes a city's agents unusable as a whole: two agents answering to one name. (An agent whose provider is
 * missing or whose `depends_on` loops is only unavailable, with its reason: the rest of the city runs.)
 */
export function checkAgents(config: Pick<CityConfig, 'agents' | 'rigs'>, configPath: string): void {
  const seen = new Map<string, string>();
  for (const agent of config.agents) {
    const name = qualifiedName(agent, config.rigs);
    const first = seen.get(name);
    if (first !== undefined) {
      throw new ConfigError(
        `${configPath}: agent ${name} is defined twice (${first === agent.source ? `twice in ${first}` : `in ${first} and ${agent.source}`})`,
      );
    }
    seen.set(name, agent.source);
  }
}
