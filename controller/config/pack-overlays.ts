import { statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { CityAgentConfig } from '../../shared/config/city-config.js';
import { outsideTree } from '../../shared/fs/within.js';
import type { KeyFinding } from '../config-schema/key-audit.js';
import { PER_PROVIDER_OVERLAY } from '../config-schema/reference-keys.js';

/**
 * The `overlay/` directories of the packs a city loads, as the reference gathers them: every pack loaded at the
 * city (included, imported, and what those import) lays its overlay into the work directory of every agent of
 * the city; a pack a rig imports, into that rig's agents'. Lowest precedence first: a pack's imports before the
 * pack itself, the city's packs before a rig's; the agent's own `overlay_dir` comes after them all.
 */
export class PackOverlays {
  private readonly city: string[] = [];
  private readonly rigs = new Map<string, string[]>();

  /**
   * Notes the `overlay/` of a pack just loaded (call it after the packs it imports). One that is a link leading
   * out of the pack is skipped, never read; a `per-provider/` in it (the reference's provider hook files) is
   * named as not supported.
   */
  add(packDir: string, label: string, rig: string | undefined, skipped: string[], findings: KeyFinding[]): void {
    const overlay = join(packDir, 'overlay');
    if (!statSync(overlay, { throwIfNoEntry: false })?.isDirectory()) return;
    const outside = outsideTree(overlay, packDir, 'the pack');
    if (outside) {
      skipped.push(`${label}overlay: ${outside}`);
      return;
    }
    const list = rig === undefined ? this.city : (this.rigs.get(rig) ?? []);
    if (rig !== undefined) this.rigs.set(rig, list);
    if (!list.includes(overlay)) list.push(overlay);
    if (statSync(join(overlay, 'per-provider'), { throwIfNoEntry: false })?.isDirectory()) {
      findings.push({
        file: `${label}overlay`,
        key: 'per-provider',
        kind: 'unsupported',
        message: `not supported: \`overlay/per-provider/\` in ${label}overlay — ${PER_PROVIDER_OVERLAY}`,
      });
    }
  }

  /**
   * Gives each agent the pack overlays it gets: the city's, then those of its rig (`dir`). An agent whose own
   * `overlay_dir` has a `per-provider/` is named as the packs' are.
   */
  stamp(root: string, agents: CityAgentConfig[], findings: KeyFinding[]): void {
    for (const agent of agents) {
      const own = [...this.city, ...((agent.dir !== undefined ? this.rigs.get(agent.dir) : undefined) ?? [])];
      if (own.length) agent.pack_overlays = own;
      else delete agent.pack_overlays;
      const dir = agent.overlay_dir;
      if (dir === undefined) continue;
      const path = dir.startsWith('//') ? join(root, dir.slice(2)) : resolve(agent.pack_dir ?? root, dir);
      if (!statSync(join(path, 'per-provider'), { throwIfNoEntry: false })?.isDirectory()) continue;
      findings.push({
        file: agent.source,
        key: 'overlay_dir',
        kind: 'unsupported',
        message: `not supported: \`per-provider/\` in the overlay_dir of agent ${agent.name} — ${PER_PROVIDER_OVERLAY}`,
      });
    }
  }
}
