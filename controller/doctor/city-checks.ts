import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  bytes,
  diskCheck,
  logSizeCheck,
  nodeCheck,
  portFree,
  writableCheck,
  type Check,
  type Finding,
} from '../../shared/doctor.js';
import { findOnPath, type ReadinessProber } from '../../shared/readiness.js';
import type { AgentDefinition } from '../agent-catalog/agent-catalog.js';
import type { ComposedPack } from '../packs/composed-pack.js';
import { readPackLock, writePackLock } from '../packs/pack-cache.js';
import { isTethered, starttimeOf } from '../process-tether.js';
import type { ResolvedProvider } from '../providers/provider-spec.js';

/** What a city's checks look at: the running city, as plain values (so that the checks can be tried alone). */
export interface CityFacts {
  root: string;
  runtimeDir: string;
  eventsPath: string;
  rotatesAt: number;
  agents: AgentDefinition[];
  /** The provider sessions start from when they name none (`[workspace] provider`). */
  defaultProvider?: ResolvedProvider;
  packs: ComposedPack[];
  rigCount: number;
  /** Program services with a port, and whether each is up. */
  ports: { service: string; port: number; running: boolean }[];
  prober: ReadinessProber;
  env: NodeJS.ProcessEnv;
}

/** The checks of one city, in the order they are reported. */
export function cityChecks(facts: CityFacts): Check[] {
  const providers = usedProviders(facts.agents, facts.defaultProvider);
  const needs = (program: string, why: string | undefined): Check[] =>
    why === undefined ? [] : [programCheck(`program.${program}`, program, why, facts.env)];
  const tmuxUsers = providers.filter((p) => p.runtime === 'tmux').map((p) => p.name);
  const gitPacks = facts.packs.filter((p) => p.gitBacked).map((p) => p.binding);
  return [
    nodeCheck(),
    writableCheck('city.dir', facts.root, 'the city directory'),
    writableCheck('city.runtime_dir', facts.runtimeDir, 'the city’s .ctl directory'),
    diskCheck('city.disk', facts.runtimeDir, 'the city’s .ctl directory'),
    logSizeCheck(
      'city.events.size',
      facts.eventsPath,
      // Rotation happens as the controller appends: twice the size it rotates at means it is not happening.
      2 * facts.rotatesAt,
      `it rotates at ${bytes(facts.rotatesAt)}`,
      'rotate it now with ctl events rotate; if it keeps growing, see the controller’s log (.ctl/controller.log)',
    ),
    ...providers.map((p) => providerCheck(p, facts)),
    ...needs('tmux', tmuxUsers.length ? `provider ${tmuxUsers.join(', ')} runs in tmux` : undefined),
    ...needs(
      'git',
      gitPacks.length || facts.rigCount
        ? [gitPacks.length ? `git-backed packs (${gitPacks.join(', ')})` : '', facts.rigCount ? 'rigs' : '']
            .filter(Boolean)
            .join(' and ') + ' need it'
        : undefined,
    ),
    orphanCheck(join(facts.runtimeDir, 'groups')),
    ...packChecksOfLock(facts.root, facts.packs),
    ...facts.ports.filter((p) => !p.running).map((p) => portCheck(`service.${p.service}.port`, p.port, p.service)),
  ];
}

/** The providers the city's sessions start from (its agents', its default), once each. */
function usedProviders(agents: AgentDefinition[], fallback: ResolvedProvider | undefined): ResolvedProvider[] {
  const byName = new Map<string, ResolvedProvider>();
  if (fallback) byName.set(fallback.name, fallback);
  for (const agent of agents) if (agent.provider) byName.set(agent.provider.name, agent.provider);
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
}

/** A provider's program installed, and signed in where that is known without the network (its probe). */
function providerCheck(provider: ResolvedProvider, facts: CityFacts): Check {
  return {
    id: `provider.${provider.name}`,
    run: async (): Promise<Finding> => {
      const item = await facts.prober.probeCommand(
        {
          name: provider.name,
          displayName: provider.display_name,
          command: provider.command,
          cwd: facts.root,
          ...(provider.probe !== undefined ? { auth: provider.probe } : {}),
          env: provider.env,
        },
        true,
      );
      const detail = item.detail ? `: ${item.detail}` : '';
      const users = facts.agents.filter((a) => a.provider?.name === provider.name).map((a) => a.name);
      const what = `provider ${provider.name} (${users.length ? users.join(', ') : 'the city’s default'})`;
      switch (item.status) {
        case 'configured':
          return { status: 'ok', message: `${what}${detail}` };
        case 'not_installed':
          return {
            status: 'fail',
            message: `${what} is not installed${detail}`,
            fix: `install it so that \`${provider.command.split(/\s+/)[0]}\` is on the PATH the supervisor runs with, or change [providers.${provider.name}] command`,
          };
        case 'needs_auth':
          return {
            status: 'fail',
            message: `${what} is not signed in${detail}`,
            fix: `sign it in as the user ctl runs as (${provider.probe === 'codex' ? 'codex login' : `run ${provider.command.split(/\s+/)[0]} once and sign in`})`,
          };
        default:
          return {
            status: 'fail',
            message: `${what}: ${item.status}${detail}`,
            fix: `check [providers.${provider.name}] in city.toml (ctl provider show ${provider.name})`,
          };
      }
    },
  };
}

function programCheck(id: string, program: string, why: string, env: NodeJS.ProcessEnv): Check {
  return {
    id,
    run: () => {
      const found = findOnPath(program, env.PATH ?? '');
      return found
        ? { status: 'ok', message: `${program}: ${found} (${why})` }
        : {
            status: 'fail',
            message: `${program} is not on PATH, and ${why}`,
            fix: `install ${program} (apt-get install ${program}) on the PATH the supervisor runs with`,
          };
    },
  };
}

interface GroupRecord {
  pid: number;
  starttime: string;
  what?: string;
}

/**
 * Programs a controller of this city started and no controller runs now (`.ctl/groups/` records whose process
 * lives, with the start time recorded, but which this controller does not hold): fixed by ending their groups, as
 * the next controller would. Records of processes gone are stale: fixed by removing them.
 */
export function orphanCheck(groupsDir: string): Check {
  return {
    id: 'city.orphans',
    run: (): Finding => {
      let files: string[] = [];
      try {
        files = readdirSync(groupsDir).filter((f) => f.endsWith('.json'));
      } catch {
        // no groups recorded
      }
      const orphans: (GroupRecord & { file: string })[] = [];
      const stale: string[] = [];
      for (const file of files) {
        let record: GroupRecord;
        try {
          record = JSON.parse(readFileSync(join(groupsDir, file), 'utf8')) as GroupRecord;
        } catch {
          stale.push(file);
          continue;
        }
        if (!Number.isInteger(record.pid) || record.pid <= 1) {
          stale.push(file);
          continue;
        }
        const now = starttimeOf(record.pid);
        if (now === undefined || now !== record.starttime) stale.push(file);
        else if (isTethered(record.pid) !== true) orphans.push({ ...record, file });
      }
      const repair = () => {
        for (const o of orphans) {
          try {
            process.kill(-o.pid, 'SIGKILL');
          } catch {
            // the group ended meanwhile
          }
          rmSync(join(groupsDir, o.file), { force: true });
        }
        for (const file of stale) rmSync(join(groupsDir, file), { force: true });
        return [
          orphans.length
            ? `ended ${orphans.length} orphan process group(s) (${orphans.map((o) => o.pid).join(', ')})`
            : '',
          stale.length ? `removed ${stale.length} stale record(s) from .ctl/groups` : '',
        ]
          .filter(Boolean)
          .join('; ');
      };
      if (orphans.length) {
        return {
          status: 'fail',
          message: `${orphans.length} program(s) a controller of this city left running: ${orphans.map((o) => `${o.pid} (${o.what ?? 'unknown'})`).join(', ')}`,
          fix: 'ctl doctor --fix ends them (or restart the city: its next controller does)',
          repair,
        };
      }
      if (stale.length) {
        return {
          status: 'warn',
          message: `${stale.length} record(s) in .ctl/groups of processes that are gone`,
          fix: 'ctl doctor --fix removes them',
          repair,
        };
      }
      return { status: 'ok', message: 'no program runs outside this controller' };
    },
  };
}

/**
 * Each import as the loader found it (a git-backed pack not fetched, not at its locked commit in the cache, a
 * local one missing), and `packs.lock` entries no import names any more (fixed by dropping them).
 */
export function packChecksOfLock(root: string, packs: ComposedPack[]): Check[] {
  const checks: Check[] = packs.map((pack) => ({
    id: `packs.${pack.binding}`,
    run: (): Finding =>
      pack.error
        ? {
            status: 'fail',
            message: `pack ${pack.binding} (${pack.source}): ${pack.error}`,
            fix: pack.gitBacked
              ? `ctl pack add ${pack.source}${pack.version ? ` --version ${pack.version}` : ''} fetches it and records it in packs.lock`
              : `fix the import's source in ${pack.file}`,
          }
        : {
            status: 'ok',
            message: `pack ${pack.binding} from ${pack.source}${pack.commit ? ` at ${pack.commit.slice(0, 12)}` : ''}`,
          },
  }));
  checks.push({
    id: 'packs.lock',
    run: (): Finding => {
      let lock;
      try {
        lock = readPackLock(root);
      } catch (err) {
        return { status: 'fail', message: (err as Error).message, fix: 'ctl pack add each git-backed import again' };
      }
      const imported = new Set(packs.filter((p) => p.gitBacked).map((p) => p.binding.replace(/^[^/]+\//, '')));
      const stale = Object.keys(lock).filter((binding) => !imported.has(binding));
      if (stale.length === 0)
        return { status: 'ok', message: `packs.lock matches the imports (${Object.keys(lock).length} locked)` };
      return {
        status: 'warn',
        message: `packs.lock locks ${stale.join(', ')}, which nothing imports`,
        fix: 'ctl doctor --fix drops those entries',
        repair: () => {
          const current = readPackLock(root);
          for (const binding of stale) delete current[binding];
          writePackLock(root, current);
          return `dropped ${stale.join(', ')} from packs.lock`;
        },
      };
    },
  });
  return checks;
}

/** A port a program service listens on, while that service is not up: is something else holding it? */
export function portCheck(id: string, port: number, service: string): Check {
  return {
    id,
    run: async (): Promise<Finding> => {
      const free = await portFree(port);
      return free
        ? { status: 'ok', message: `port ${port} of service ${service} is free` }
        : {
            status: 'fail',
            message: `port ${port} of service ${service} is in use by another program`,
            fix: `stop what listens on ${port} (ss -ltnp 'sport = :${port}') or change the service's port`,
          };
    },
  };
}
