import type { CityAgentConfig, ConfigPatch } from '../../shared/config/city-config.js';
import { ConfigError } from '../../shared/config/config-error.js';
import type { ConfigProblem } from './compose.js';
import { patchAgent } from './patches.js';
import { REFERENCE_ONLY_AGENT_PATCH_KEYS } from '../config-schema/reference-keys.js';

/**
 * A pack's `[[patches.agent]]`, laid over the agents its load brought (`agents` from `first` on: its own and
 * those of the packs it imports), in file order. A patch names an agent as the pack knows it (`dog`, or
 * `dolt.dog` for one of an import), `qualify` turns that into the composed name; failing that, as the reference
 * matches, by the agent's name in its own pack (`localName`): gastown's patch of `dog` reaches the `dog` its
 * import of maintenance brings. With `dir`, only the agent of that rig. One matching nothing, or setting a key
 * wrongly, is a problem naming the patch; the rest applies.
 */
export function applyPackPatches(
  patches: ConfigPatch[],
  agents: CityAgentConfig[],
  first: number,
  qualify: (name: string) => string,
  localName: (composed: string) => string | undefined,
  file: string,
  problems: ConfigProblem[],
): void {
  for (const [i, patch] of patches.entries()) {
    const key = `patches.agent[${i}]`;
    const target = qualify(patch.name);
    const find = (matches: (a: CityAgentConfig) => boolean) => {
      for (let j = first; j < agents.length; j++) {
        const a = agents[j]!;
        if (matches(a) && (patch.dir === undefined || a.dir === patch.dir)) return j;
      }
      return -1;
    };
    let index = find((a) => a.name === target);
    if (index < 0) index = find((a) => localName(a.name) === patch.name);
    if (index < 0) {
      problems.push({ file, key, message: `${file}: ${key}: the pack has no agent named ${patch.name} to patch` });
      continue;
    }
    const fields = Object.fromEntries(
      Object.entries(patch.fields).filter(([k]) => !Object.hasOwn(REFERENCE_ONLY_AGENT_PATCH_KEYS, k)),
    );
    try {
      agents[index] = patchAgent(agents[index]!, fields, (k) => `${file}: ${key}.${k}`);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push({ file, key, message: err.message });
    }
  }
}

/**
 * A rig's `[[rigs.overrides]]` and `[[rigs.patches]]`, laid over the agents its packs just brought (`agents` from
 * `first` on), in file order: each names its agent by `agent`, as its pack knows it (`dev`) or as composed
 * (`web.dev`). One matching nothing, or setting a key wrongly, is a problem naming it; the rest applies.
 */
export function applyRigOverrides(
  rig: string,
  overrides: ConfigPatch[],
  agents: CityAgentConfig[],
  first: number,
  localName: (composed: string) => string | undefined,
  problems: ConfigProblem[],
): void {
  for (const [i, override] of overrides.entries()) {
    const key = `rigs.${rig}.${override.key ?? `overrides[${i}]`}`;
    let index = -1;
    for (let j = first; j < agents.length; j++) {
      const a = agents[j]!;
      if (a.dir === rig && (a.name === override.name || localName(a.name) === override.name)) {
        index = j;
        break;
      }
    }
    if (index < 0) {
      const message = `city.toml: ${key}: rig ${rig}'s packs bring no agent named ${override.name}`;
      problems.push({ file: 'city.toml', key, message });
      continue;
    }
    const fields = Object.fromEntries(
      Object.entries(override.fields).filter(
        ([k]) => k !== 'dir' && !Object.hasOwn(REFERENCE_ONLY_AGENT_PATCH_KEYS, k),
      ),
    );
    try {
      agents[index] = patchAgent(agents[index]!, fields, (k) => `city.toml: ${key}.${k}`);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push({ file: 'city.toml', key, message: err.message });
    }
  }
}
