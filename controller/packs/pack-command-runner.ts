import { join } from 'node:path';
import type {
  PackCommandResponse,
  PackCommandRunInputBody,
  PackCommandRunResponse,
} from '../../shared/dto/pack-commands.js';
import { parseDuration } from '../../shared/duration.js';
import { Problem } from '../../shared/http/problem.js';
import type { CommandRunner } from '../commands.js';
import type { ComposedPack } from './composed-pack.js';
import { commandOutsidePack, type PackCommand } from './pack-commands.js';

const DEFAULT_TIMEOUT_MS = 120_000;
const MAX_TIMEOUT_MS = 30 * 60_000;
const OUTPUT_MAX = 1024 * 1024;

/** What runs a city's pack commands: its composed packs, its root and name, the runner its commands go through. */
export interface PackCommandsHost {
  name: string;
  root: string;
  composed: { packs: ComposedPack[] };
  commands: CommandRunner;
}

interface Found {
  view: PackCommandResponse;
  packDir: string;
  command: PackCommand;
}

/**
 * The commands the city's packs offer (`[[commands]]`, `commands/<words>/run.sh`), under the namespace their
 * agents are named under — `ctl <binding> <command>` — and the running of one: its script, in the city's
 * directory, as the controller's child in its own process group, killed with all it started at its time-out or
 * when the city stops. Packs a rig imports offer theirs through the city's import of the same pack.
 */
export class PackCommands {
  constructor(private readonly city: PackCommandsHost) {}

  list(): PackCommandResponse[] {
    return this.found().map((f) => f.view);
  }

  async run(body: PackCommandRunInputBody): Promise<PackCommandRunResponse> {
    let timeoutMs = DEFAULT_TIMEOUT_MS;
    if (body.timeout !== undefined) {
      try {
        timeoutMs = parseDuration(body.timeout);
      } catch {
        throw invalid('body.timeout', 'must be a duration such as 30s or 5m', body.timeout);
      }
      if (timeoutMs <= 0 || timeoutMs > MAX_TIMEOUT_MS)
        throw invalid('body.timeout', 'must be more than 0 and at most 30m', body.timeout);
    }
    const ofBinding = this.found().filter((f) => f.view.binding === body.binding);
    if (ofBinding.length === 0) {
      throw new Problem('command-not-found', `not_found: no pack offers commands under ${body.binding}`);
    }
    // The longest run of leading words that names a command picks it.
    let chosen: Found | undefined;
    for (const f of ofBinding) {
      const words = f.view.words;
      if (words.length > body.argv.length || words.some((w, i) => body.argv[i] !== w)) continue;
      if (!chosen || words.length > chosen.view.words.length) chosen = f;
    }
    if (!chosen) {
      const offered = ofBinding.map((f) => f.view.command).join(', ');
      throw new Problem(
        'command-not-found',
        `not_found: ${body.binding} has no command ${JSON.stringify(body.argv.join(' '))} (it has: ${offered})`,
      );
    }
    const args = body.argv.slice(chosen.view.words.length);
    const script = join(chosen.packDir, chosen.view.script);
    // Read when the pack was (and then left out); checked again for a link made since.
    const why = commandOutsidePack(chosen.packDir, chosen.command);
    if (why) throw new Problem('command-not-found', `not_found: ${why}`);
    const quoted = [script, ...args].map(shellQuote).join(' ');
    // Scripts written for the reference read its names (GC_*); ours are CTL_*.
    const env = {
      ...process.env,
      CTL_CITY: this.city.name,
      CTL_CITY_PATH: this.city.root,
      CTL_PACK_DIR: chosen.packDir,
      GC_CITY: this.city.name,
      GC_CITY_PATH: this.city.root,
      GC_PACK_DIR: chosen.packDir,
    };
    const result = await this.city.commands.run(`/bin/sh ${quoted}`, {
      cwd: this.city.root,
      env,
      timeoutMs,
      outputMax: OUTPUT_MAX,
    });
    return {
      binding: chosen.view.binding,
      command: chosen.view.command,
      args,
      exit_code: result.exitCode,
      ...(result.signal ? { signal: result.signal } : {}),
      output: result.output,
      timed_out: result.timedOut,
      duration_ms: result.durationMs,
      ...(result.error ? { error: result.error } : {}),
    };
  }

  private found(): Found[] {
    const out: Found[] = [];
    const seen = new Set<string>();
    for (const pack of this.city.composed.packs) {
      if (!pack.dir || pack.rig !== undefined || !pack.commands || !pack.namespace) continue;
      for (const c of pack.commands) {
        const key = `${pack.namespace} ${c.words.join(' ')}`;
        // Two packs re-exported under one namespace may both offer a command: the first loaded wins.
        if (seen.has(key)) continue;
        seen.add(key);
        out.push({
          packDir: pack.dir,
          command: c,
          view: {
            binding: pack.namespace,
            command: c.words.join(' '),
            words: c.words,
            pack: pack.binding,
            script: c.script,
            ...(c.description ? { description: c.description } : {}),
            ...(c.help ? { help: c.help } : {}),
          },
        });
      }
    }
    return out;
  }
}

function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

function invalid(location: string, message: string, value: unknown): Problem {
  return new Problem('validation-failed', `invalid: ${location} ${message}`, {
    errors: [{ location, message, value }],
  });
}
