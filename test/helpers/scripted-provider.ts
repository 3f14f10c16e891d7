import { rmSync } from 'node:fs';
import type { ModelServer } from './model-server.js';

// What every scripted real-CLI set-up hands its tests alike: a provider based on a builtin preset that runs the
// CLI with an environment of its own, as a city.toml table or a `POST /providers` body, and a close that ends the
// model server and removes the home.

export interface ProviderBody {
  name: string;
  base: string;
  command: string;
  env: Record<string, string>;
}

export interface ScriptedProvider {
  /** A `[providers.<name>]` table based on the preset, running the CLI; `extra` adds lines (TOML) to it. */
  providerToml(name: string, extra?: string): string;
  /** The body of `POST /providers` for the same provider. */
  providerBody(name: string): ProviderBody;
  close(): Promise<void>;
}

export function scriptedProvider(
  preset: string,
  bin: string,
  env: Record<string, string>,
  model: ModelServer,
  home: string,
): ScriptedProvider {
  const envToml = Object.entries(env)
    .map(([k, v]) => `${k} = ${JSON.stringify(v)}`)
    .join(', ');
  const base = `builtin:${preset}`;
  return {
    providerToml: (name, extra = '') =>
      `\n[providers.${name}]\nbase = "${base}"\ncommand = ${JSON.stringify(bin)}\nenv = { ${envToml} }\n${extra}`,
    providerBody: (name) => ({ name, base, command: bin, env }),
    close: async () => {
      await model.close();
      rmSync(home, { recursive: true, force: true });
    },
  };
}
