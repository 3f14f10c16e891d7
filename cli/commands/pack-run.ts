import type { CityInfo } from '../../shared/dto/cities.js';
import type { PackCommandResponse } from '../../shared/dto/pack-commands.js';
import { call, CSRF } from '../_api.js';
import { allPages } from '../_pages.js';
import type { Api } from '../_types.js';
import { CliError } from '../_errors.js';
import { json, line, table } from '../_output.js';
import { cityPath, inCity } from '../_scope.js';

// `ctl <binding> <command> [args…]`: a command a pack of the city offers, the reference's `gc <binding>
// <command>`. The words name no command of ctl's own; the city (the one in scope) says whether a pack offers
// commands under the first, and its controller runs the one named — the CLI never reads a city's files.

/** Leading `--city X`, `--api URL`, `--json` (as `--flag value` or `--flag=value`), then the rest. */
function leadingGlobals(words: string[]): { city?: string; api?: string; json: boolean; rest: string[] } {
  const out: { city?: string; api?: string; json: boolean; rest: string[] } = { json: false, rest: [] };
  let i = 0;
  for (; i < words.length; i++) {
    const m = /^--(city|api|json)(?:=(.*))?$/.exec(words[i]!);
    if (!m) break;
    if (m[1] === 'json') out.json = true;
    else out[m[1] as 'city' | 'api'] = m[2] ?? words[++i];
  }
  out.rest = words.slice(i);
  return out;
}

/** Every command the city's packs offer (all pages). */
export async function packCommands(api: Api, city: CityInfo): Promise<PackCommandResponse[]> {
  return allPages(async (limit, cursor) => {
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/commands', {
        params: { path: cityPath(city), query: { limit, ...(cursor ? { cursor } : {}) } },
      }),
    );
    return data;
  });
}

/**
 * Runs `words` as a pack command when the city in scope offers commands under its first word: true once it ran
 * (the exit status is the command's), false when nothing offers that binding (the words stay an unknown command).
 */
export async function runPackCommand(words: string[]): Promise<boolean> {
  const globals = leadingGlobals(words);
  const [binding, ...argv] = globals.rest;
  if (binding === undefined) return false;
  let found: { api: Awaited<ReturnType<typeof inCity>>['api']; city: Awaited<ReturnType<typeof inCity>>['city'] };
  let offered: PackCommandResponse[];
  try {
    found = await inCity(globals);
    offered = (await packCommands(found.api, found.city)).filter((c) => c.binding === binding);
  } catch {
    // No city in scope, or none reachable: the words are what they looked like, an unknown command.
    return false;
  }
  if (offered.length === 0) return false;
  const args = argv[0] === '--' ? argv.slice(1) : argv;
  if (args.length === 0 || args[0] === '--help' || args[0] === '-h') {
    line(`Commands of ${binding} (ctl ${binding} COMMAND [ARGS…]):`);
    table<PackCommandResponse>(
      [
        { header: 'COMMAND', value: (c) => c.command, kind: 'id' },
        { header: 'DESCRIPTION', value: (c) => c.description ?? '-', kind: 'text' },
      ],
      offered,
    );
    return true;
  }
  const { data } = await call(
    found.api,
    found.api.client.POST('/v0/city/{cityName}/commands/run', {
      params: { header: CSRF, path: cityPath(found.city) },
      body: { binding, argv: args },
    }),
  );
  if (globals.json) {
    json(data);
  } else {
    process.stdout.write(data.output);
    if (data.output && !data.output.endsWith('\n')) process.stdout.write('\n');
  }
  if (data.timed_out) throw new CliError(`timed out after ${Math.round(data.duration_ms / 1000)}s and was killed`);
  if (data.error) throw new CliError(`could not start: ${data.error}`);
  if (data.exit_code !== 0) process.exitCode = data.exit_code ?? 1;
  return true;
}
