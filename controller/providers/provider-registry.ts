import type { CityConfig } from '../../shared/config/city-config.js';
import type { ResolvedProvider } from './provider-spec.js';
import { resolveCityProviders, WORKSPACE_PROVIDER } from './resolve.js';

/**
 * The providers a city can start sessions with, resolved from its configuration: the built-in presets, its
 * `[providers.<name>]` tables, and `default` for its `[workspace] start_command`.
 */
export class ProviderRegistry {
  private resolved = new Map<string, ResolvedProvider>();
  private defaultName: string | undefined;

  constructor(config: CityConfig, configPath: string) {
    this.load(config, configPath);
  }

  /** Resolves the configuration again; throws a ConfigError (and keeps what it had) when it is not usable. */
  load(config: CityConfig, configPath: string): void {
    const { resolved, errors } = resolveCityProviders(
      config.providers,
      { startCommand: config.workspace.startCommand },
      configPath,
    );
    const [first] = errors.values();
    if (first) throw first;
    this.resolved = resolved;
    this.defaultName =
      config.workspace.provider ?? (config.workspace.startCommand !== undefined ? WORKSPACE_PROVIDER : undefined);
  }

  get(name: string): ResolvedProvider | undefined {
    return this.resolved.get(name);
  }

  all(): ResolvedProvider[] {
    return [...this.resolved.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** The provider a session gets when none is named: `[workspace] provider`, else the start command's. */
  defaultProvider(): string | undefined {
    return this.defaultName;
  }
}
