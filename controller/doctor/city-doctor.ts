import type { DoctorReport } from '../../shared/dto/doctor.js';
import { report, runChecks } from '../../shared/doctor.js';
import { DEFAULT_ROTATION_MAX_BYTES } from '../auto-rotate.js';
import type { CityRuntime } from '../city-runtime.js';
import type { ResolvedProvider } from '../providers/provider-spec.js';
import { cityChecks } from './city-checks.js';
import { packDoctorChecks, type PackCheck } from './pack-checks.js';

/** How much of a check script's output is kept. */
const OUTPUT_MAX = 16 * 1024;

/** A city's doctor report: its own checks and its packs' (the city's own pack.toml is binding `city`). */
export async function cityDoctor(city: CityRuntime, fix: boolean): Promise<DoctorReport> {
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

function defaultProvider(city: CityRuntime): { defaultProvider?: ResolvedProvider } {
  const name = city.providers.defaultProvider();
  const provider = name === undefined ? undefined : city.providers.get(name);
  return provider ? { defaultProvider: provider } : {};
}
