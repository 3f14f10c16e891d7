import type { DoctorReport } from '../../shared/dto/doctor.js';
import { report, runChecks } from '../../shared/doctor.js';
import { DEFAULT_ROTATION_MAX_BYTES } from '../auto-rotate.js';
import type { CityConfig } from '../../shared/config/city-config.js';
import type { CityPaths } from '../../shared/paths.js';
import type { ReadinessProber } from '../../shared/readiness.js';
import type { AgentDefinition } from '../agent-catalog/agent-catalog.js';
import type { CommandRunner } from '../commands.js';
import type { ComposedConfig } from '../config/compose.js';
import type { ProviderRegistry } from '../providers/provider-registry.js';
import type { ServiceRunner } from '../services/service-runner.js';
import type { ResolvedProvider } from '../providers/provider-spec.js';
import { cityChecks } from './city-checks.js';
import { packDoctorChecks, type PackCheck } from './pack-checks.js';

/** How much of a check script's output is kept. */
const OUTPUT_MAX = 16 * 1024;

/** What the doctor reads of the city, and the command runner its packs' checks run under. */
export interface DoctorHost {
  readonly name: string;
  readonly root: string;
  readonly paths: Pick<CityPaths, 'runtimeDir' | 'events'>;
  readonly config: CityConfig;
  readonly composed: ComposedConfig;
  readonly agents: AgentDefinition[];
  commands: Pick<CommandRunner, 'run'>;
  services: Pick<ServiceRunner, 'status'>;
  providers: Pick<ProviderRegistry, 'defaultProvider' | 'get'>;
  prober: ReadinessProber;
}

/** A city's doctor report: its own checks and its packs' (the city's own pack.toml is binding `city`). */
export async function cityDoctor(city: DoctorHost, fix: boolean): Promise<DoctorReport> {
  const { composed, config } = city;
  const packs = [
    { binding: 'city', dir: city.root, doctors: composed.rootDoctors },
    ...composed.packs.filter((p) => !p.rig),
  ];
  const run = (check: PackCheck) =>
    city.commands.run(`exec '${check.script.replaceAll("'", `'\\''`)}'`, {
      cwd: check.packDir,
      env: { ...process.env, CTL_CITY_PATH: city.root, CTL_PACK_DIR: check.packDir },
      timeoutMs: check.timeoutMs,
      outputMax: OUTPUT_MAX,
    });
  const checks = [
    ...cityChecks({
      root: city.root,
      runtimeDir: city.paths.runtimeDir,
      eventsPath: city.paths.events,
      rotatesAt: config.eventsRotationMaxBytes ?? DEFAULT_ROTATION_MAX_BYTES,
      agents: city.agents,
      ...defaultProvider(city),
      packs: composed.packs,
      rigCount: config.rigs.length,
      ports: config.services
        .filter((s) => s.command !== undefined && (s.port ?? 0) > 0)
        .map((s) => ({ service: s.name, port: s.port!, running: city.services.status(s).state === 'running' })),
      prober: city.prober,
      env: process.env,
    }),
    ...packDoctorChecks(packs, run),
  ];
  return report('city', await runChecks(checks, fix), city.name);
}

function defaultProvider(city: DoctorHost): { defaultProvider?: ResolvedProvider } {
  const name = city.providers.defaultProvider();
  const provider = name === undefined ? undefined : city.providers.get(name);
  return provider ? { defaultProvider: provider } : {};
}
