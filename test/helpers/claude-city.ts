import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { registerCity } from './city-api.js';
import { startModelServer, type ModelServer } from './model-server.js';
import { realCli, type RealCli } from './real-clis.js';
import { scriptedProvider, type ScriptedProvider } from './scripted-provider.js';
import type { SessionCity } from './sessions.js';
import { TestSupervisor, tempDir } from './supervisor.js';

// The real Claude Code, offline: its model is the scripted server (model-server.ts), its home a folder of its own
// (nothing of the person's ~/.claude is read or written), telemetry, updates and the plugin marketplace off, and no
// retries (a scripted failure is answered at once). What each real-Claude test file sets up alike.

export interface ScriptedClaude extends ScriptedProvider {
  cli: RealCli;
  model: ModelServer;
  /** Its HOME. */
  home: string;
  /** The environment a provider running it gets. */
  env: Record<string, string>;
}

/**
 * The CLI (the dev dependency, or the version CTL_TEST_CLAUDE_VERSION names: installed on first use, so a caller's
 * `before` needs minutes of timeout), a scripted model server and a home. Prints the version under test.
 */
export async function startScriptedClaude(envExtra: Record<string, string> = {}): Promise<ScriptedClaude> {
  const cli = realCli('claude');
  process.stdout.write(`      claude ${cli.version} (${cli.source})\n`);
  const model = await startModelServer();
  const home = tempDir('ctl-claude-home-');
  const env: Record<string, string> = {
    HOME: home,
    ANTHROPIC_BASE_URL: model.url,
    ANTHROPIC_API_KEY: 'test-key',
    DISABLE_TELEMETRY: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL: '1',
    CLAUDE_CODE_MAX_RETRIES: '0',
    // Claude Code refuses bypassPermissions as root (as tests here run) outside a sandbox it is told of.
    IS_SANDBOX: '1',
    ...envExtra,
  };
  return { cli, model, home, env, ...scriptedProvider('claude', cli.bin, env, model, home) };
}

/**
 * A supervisor with one city made of `files` (paths under the city directory: `city.toml`, `agents/…`), written
 * before the city is registered through the API, so that its first tick already sees all of it.
 */
export async function startCityOf(name: string, files: Record<string, string>): Promise<SessionCity> {
  const sup = await TestSupervisor.start();
  const dir = sup.cityDir(name);
  mkdirSync(dir, { recursive: true });
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return { sup, api: await registerCity(sup, name), dir };
}
