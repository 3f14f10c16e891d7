import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parse } from 'smol-toml';
import type { Check, Finding } from '../../shared/doctor.js';
import type { CommandResult } from '../commands.js';
import type { PackDoctorEntry } from '../packs/pack-file.js';

/** How long a pack's check may run when it does not say. */
export const PACK_CHECK_TIMEOUT_MS = 30_000;

/** A pack's check, found: its `[[doctor]]` entry, or a `doctor/<name>/` directory with a `run.sh`. */
export interface PackCheck {
  /** `<binding>.<name>`. */
  id: string;
  binding: string;
  name: string;
  /** The script, absolute, inside the pack. */
  script: string;
  packDir: string;
  description?: string;
  timeoutMs: number;
}

/**
 * The checks a pack ships, as the reference defines them: `[[doctor]]` entries of its `pack.toml` (`name`, `script`
 * relative to the pack, `description`, our `timeout`), and each `doctor/<name>/` directory holding a `run.sh` (or
 * the script its `doctor.toml` names in `run`). A script that would lie outside the pack is named as a failing
 * check, never run.
 */
export function packChecks(binding: string, packDir: string, declared: PackDoctorEntry[]): (PackCheck | Broken)[] {
  const out: (PackCheck | Broken)[] = [];
  const add = (name: string, script: string, description: string | undefined, timeoutMs: number) => {
    const id = `pack.${binding}.${name}`;
    const path = resolve(packDir, script);
    const rel = relative(packDir, path);
    if (rel.startsWith('..') || rel === '') return out.push({ id, broken: `script ${script} lies outside the pack` });
    if (out.some((c) => c.id === id)) return;
    out.push({ id, binding, name, script: path, packDir, timeoutMs, ...(description ? { description } : {}) });
  };
  for (const entry of declared) add(entry.name, entry.script, entry.description, entry.timeoutMs);
  const dir = join(packDir, 'doctor');
  let names: string[] = [];
  try {
    names = readdirSync(dir).sort();
  } catch {
    // no doctor/ directory
  }
  for (const name of names) {
    if (name.startsWith('.') || name.startsWith('_')) continue;
    const home = join(dir, name);
    if (!statSync(home, { throwIfNoEntry: false })?.isDirectory()) continue;
    let run = 'run.sh';
    let description: string | undefined;
    const manifest = join(home, 'doctor.toml');
    if (existsSync(manifest)) {
      try {
        const doc = parse(readFileSync(manifest, 'utf8'));
        if (typeof doc.run === 'string' && doc.run) run = doc.run;
        if (typeof doc.description === 'string') description = doc.description;
      } catch (err) {
        out.push({ id: `pack.${binding}.${name}`, broken: `doctor/${name}/doctor.toml: ${(err as Error).message}` });
        continue;
      }
    }
    if (!existsSync(join(home, run))) continue;
    add(name, relative(packDir, join(home, run)), description, PACK_CHECK_TIMEOUT_MS);
  }
  return out;
}

export interface Broken {
  id: string;
  broken: string;
}

/** What a check script's run says, by the reference's protocol: exit 0 ok, 1 warn, else fail; first line the message. */
export function scriptFinding(check: PackCheck, result: CommandResult): Finding {
  // The message is stdout's first line; a script that printed nothing there is named by what it said on stderr.
  const lines = (result.stdout.trim() ? result.stdout : result.output)
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const what = check.description ?? check.name;
  const fix = `see ${relative(check.packDir, check.script)} of pack ${check.binding}${check.description ? ` (${check.description})` : ''}`;
  if (result.timedOut) {
    return { status: 'fail', message: `${what}: did not finish within ${check.timeoutMs / 1000}s`, fix };
  }
  if (result.exitCode === null) {
    return { status: 'fail', message: `${what}: could not run: ${result.error ?? result.signal ?? 'killed'}`, fix };
  }
  const message = lines[0] ?? (result.exitCode === 0 ? 'passed' : `exited ${result.exitCode}`);
  const details = lines.slice(1);
  const status = result.exitCode === 0 ? 'ok' : result.exitCode === 1 ? 'warn' : 'fail';
  return { status, message, ...(status !== 'ok' ? { fix } : {}), ...(details.length ? { details } : {}) };
}

/** The checks of every pack, to run with the city's command runner (its own process group, bounded in time). */
export function packDoctorChecks(
  packs: { binding: string; dir?: string; doctors?: PackDoctorEntry[] }[],
  run: (check: PackCheck) => Promise<CommandResult>,
): Check[] {
  const checks: Check[] = [];
  for (const pack of packs) {
    if (!pack.dir) continue;
    for (const found of packChecks(pack.binding, pack.dir, pack.doctors ?? [])) {
      if ('broken' in found) {
        checks.push({ id: found.id, run: () => ({ status: 'fail', message: found.broken, fix: 'fix the pack' }) });
      } else {
        checks.push({ id: found.id, run: async () => scriptFinding(found, await run(found)) });
      }
    }
  }
  return checks;
}
