import { readFileSync, statSync } from 'node:fs';
import { ConfigError } from './config-error.js';

/**
 * The most a configuration TOML file (`city.toml`, `pack.toml`, `agent.toml`, `packs.lock`) may hold. Real ones
 * are a few KiB; parsing is linear but slow (smol-toml takes seconds over 9 MB), and a file is parsed on every
 * edit and reload, so a file far past any real one is refused before it is read, naming the limit.
 */
export const MAX_TOML_BYTES = 1024 * 1024;

/** The limit as people read it. */
export const MAX_TOML_SIZE = '1 MiB';

/** A TOML file's text, refused (a ConfigError naming `label`) when it is over MAX_TOML_BYTES; read errors as they are. */
export function readTomlText(path: string, label: string): string {
  const size = statSync(path).size;
  if (size > MAX_TOML_BYTES) throw tooLarge(label, size);
  return readFileSync(path, 'utf8');
}

/** The ConfigError of a TOML file or text of `bytes` over the limit. */
export function tooLarge(label: string, bytes: number): ConfigError {
  return new ConfigError(
    `${label}: ${(bytes / 1024 / 1024).toFixed(1)} MiB, over the ${MAX_TOML_SIZE} limit for a TOML file`,
  );
}
