import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startModelServer, type ModelServer } from './model-server.js';
import { realCli, type RealCli } from './real-clis.js';
import { scriptedProvider, type ScriptedProvider } from './scripted-provider.js';
import { tempDir } from './temp-dir.js';

// The real Codex, offline — `codex exec` (the `codex` preset) or its ACP adapter (the `codex-acp` preset): its
// model provider is the scripted server's Responses API (model-server.ts), named in a config.toml of a CODEX_HOME
// of its own (nothing of the person's ~/.codex is read or written), with no retries (a scripted failure is
// answered at once).

export interface ScriptedCodex extends ScriptedProvider {
  cli: RealCli;
  model: ModelServer;
  /** Its HOME (its CODEX_HOME is `codex` in it). */
  home: string;
  codexHome: string;
  /** The environment a provider running it gets. */
  env: Record<string, string>;
}

export interface ScriptedCodexOptions {
  /** The ACP adapter (`codex-acp`) rather than `codex exec`. */
  acp?: boolean;
  /**
   * Its `approval_policy` and unsandboxed runs (`sandbox_mode = "danger-full-access"`: Codex's sandbox needs
   * bubblewrap, which CI machines lack). For the adapter, which takes both from its config; `codex exec` gets
   * them from its preset's flags.
   */
  approvalPolicy?: 'never' | 'untrusted';
  /** The model its config names (default gpt-5.5, one Codex knows: of an unknown one it warns in every turn). */
  model?: string;
}

/**
 * The CLI (the dev dependency, or the version CTL_TEST_CODEX_VERSION / CTL_TEST_CODEX_ACP_VERSION names: installed
 * on first use, so a caller's `before` needs minutes of timeout), a scripted model server and a home. Prints the
 * version under test.
 */
export async function startScriptedCodex(options: ScriptedCodexOptions = {}): Promise<ScriptedCodex> {
  const preset = options.acp ? 'codex-acp' : 'codex';
  const cli = realCli(preset);
  process.stdout.write(`      ${preset} ${cli.version} (${cli.source})\n`);
  const model = await startModelServer();
  const home = tempDir(`ctl-${preset}-home-`);
  const codexHome = join(home, 'codex');
  mkdirSync(codexHome);
  const policy = options.approvalPolicy
    ? [`approval_policy = "${options.approvalPolicy}"`, 'sandbox_mode = "danger-full-access"']
    : [];
  writeFileSync(
    join(codexHome, 'config.toml'),
    [
      'model_provider = "mock"',
      `model = "${options.model ?? 'gpt-5.5'}"`,
      ...policy,
      'check_for_update_on_startup = false',
      '[model_providers.mock]',
      'name = "mock"',
      `base_url = "${model.url}/v1"`,
      'wire_api = "responses"',
      'env_key = "MOCK_KEY"',
      'request_max_retries = 0',
      'stream_max_retries = 0',
      '[analytics]',
      'enabled = false',
      '',
    ].join('\n'),
  );
  const env: Record<string, string> = { HOME: home, CODEX_HOME: codexHome, MOCK_KEY: 'test-key' };
  return { cli, model, home, codexHome, env, ...scriptedProvider(preset, cli.bin, env, model, home) };
}
