import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startModelServer, type ModelServer } from './model-server.js';
import { realCli, type RealCli } from './real-clis.js';
import { tempDir } from './supervisor.js';

// The real Codex (`codex exec`, the `codex` preset), offline: its model provider is the scripted server's
// Responses API (model-server.ts), named in a config.toml of a CODEX_HOME of its own (nothing of the person's
// ~/.codex is read or written), with no retries (a scripted failure is answered at once).

export interface ScriptedCodex {
  cli: RealCli;
  model: ModelServer;
  /** Its HOME (its CODEX_HOME is `codex` in it). */
  home: string;
  codexHome: string;
  /** The environment a provider running it gets. */
  env: Record<string, string>;
  /** A `[providers.<name>]` table based on the codex preset, running it; `extra` adds lines (TOML) to it. */
  providerToml(name: string, extra?: string): string;
  /** The body of `POST /providers` for the same provider. */
  providerBody(name: string): Record<string, unknown>;
  close(): Promise<void>;
}

/**
 * The CLI (the dev dependency, or the version CTL_TEST_CODEX_VERSION names: installed on first use, so a caller's
 * `before` needs minutes of timeout), a scripted model server and a home. Prints the version under test.
 */
export async function startScriptedCodex(): Promise<ScriptedCodex> {
  const cli = realCli('codex');
  process.stdout.write(`      codex ${cli.version} (${cli.source})\n`);
  const model = await startModelServer();
  const home = tempDir('ctl-codex-home-');
  const codexHome = join(home, 'codex');
  mkdirSync(codexHome);
  writeFileSync(
    join(codexHome, 'config.toml'),
    [
      'model_provider = "mock"',
      // A model Codex knows (of an unknown one it warns in every turn).
      'model = "gpt-5.5"',
      '[model_providers.mock]',
      'name = "mock"',
      `base_url = "${model.url}/v1"`,
      'wire_api = "responses"',
      'env_key = "MOCK_KEY"',
      'request_max_retries = 0',
      'stream_max_retries = 0',
      '',
    ].join('\n'),
  );
  const env: Record<string, string> = { HOME: home, CODEX_HOME: codexHome, MOCK_KEY: 'test-key' };
  const envToml = Object.entries(env)
    .map(([k, v]) => `${k} = ${JSON.stringify(v)}`)
    .join(', ');
  return {
    cli,
    model,
    home,
    codexHome,
    env,
    providerToml: (name, extra = '') =>
      `\n[providers.${name}]\nbase = "builtin:codex"\ncommand = ${JSON.stringify(cli.bin)}\nenv = { ${envToml} }\n${extra}`,
    providerBody: (name) => ({ name, base: 'builtin:codex', command: cli.bin, env }),
    close: async () => {
      await model.close();
      rmSync(home, { recursive: true, force: true });
    },
  };
}
