import { readFileSync } from 'node:fs';
import { parseCityConfig, type CityConfig } from '../../shared/config/city-config.js';
import type { ProviderReadinessResponse, ReadinessItem } from '../../shared/dto/readiness.js';
import {
  parseProbeList,
  providerReadinessBody,
  SUPPORTED_PROVIDERS,
  type ReadinessProber,
} from '../../shared/readiness.js';
import type { ProviderRegistry } from './provider-registry.js';
import { resolveCityProviders, type ProviderResolution } from './resolve.js';

/**
 * `GET /v0/city/{cityName}/provider-readiness`: every provider of the city (or those asked for, and the
 * reference's probe-only names such as `pi`). Readiness looks at `city.toml` as it is on disk now, so a person
 * sees at once a provider they broke by hand (`invalid_configuration`, with why) while the controller still
 * runs the last good configuration. A provider built on a preset keeps that preset's probe (installed and
 * signed in), run on its own program; any other is `configured` when its program is found, else
 * `not_installed`.
 */
export async function cityProviderReadiness(
  options: {
    configPath: string;
    cityRoot: string;
    /** What the controller runs now: used when `city.toml` cannot be read or parsed at all. */
    config: CityConfig;
    registry: ProviderRegistry;
    prober: ReadinessProber;
  },
  providers: string | undefined,
  fresh: boolean,
): Promise<ProviderReadinessResponse> {
  const { resolution, fileError, config } = onDisk(options);
  const names = new Set([...resolution.resolved.keys(), ...resolution.errors.keys()]);
  const cityNames = [...names].sort();
  const asked = parseProbeList(
    providers,
    cityNames,
    'providers',
    (n) => names.has(n) || SUPPORTED_PROVIDERS.includes(n),
  );
  const items = await Promise.all(
    asked.map(async (name): Promise<ReadinessItem> => {
      const error = resolution.errors.get(name);
      if (error) {
        const raw = config.providers[name]?.display_name;
        return {
          name,
          kind: 'provider',
          display_name: typeof raw === 'string' ? raw : name,
          status: 'invalid_configuration',
          detail: error.message,
        };
      }
      const provider = resolution.resolved.get(name);
      if (!provider) return options.prober.probe(name, fresh);
      if (fileError && provider.city_level) {
        return {
          name,
          kind: 'provider',
          display_name: provider.display_name,
          status: 'invalid_configuration',
          detail: fileError,
        };
      }
      return options.prober.probeCommand(
        {
          name,
          displayName: provider.display_name,
          command: provider.command,
          cwd: options.cityRoot,
          ...(provider.probe !== undefined ? { auth: provider.probe } : {}),
          env: provider.env,
        },
        fresh,
      );
    }),
  );
  return providerReadinessBody(Object.fromEntries(items.map((item) => [item.name, item])));
}

/** The city's providers as `city.toml` on disk resolves them, or the running ones when it cannot be read. */
function onDisk(options: { configPath: string; config: CityConfig; registry: ProviderRegistry }): {
  resolution: ProviderResolution;
  fileError?: string;
  config: CityConfig;
} {
  let config: CityConfig;
  try {
    config = parseCityConfig(readFileSync(options.configPath, 'utf8'), 'city.toml');
  } catch (err) {
    const resolved = new Map(options.registry.all().map((p) => [p.name, p]));
    return {
      resolution: { resolved, errors: new Map() },
      fileError: `city.toml cannot be used as it is on disk: ${(err as Error).message}`,
      config: options.config,
    };
  }
  const resolution = resolveCityProviders(
    config.providers,
    { startCommand: config.workspace.startCommand },
    'city.toml',
  );
  return { resolution, config };
}
