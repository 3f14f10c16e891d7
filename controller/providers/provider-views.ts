import type { ProviderPublicResponse, ProviderResponse } from '../../shared/dto/providers.js';
import { optionsSchemaView } from './provider-options.js';
import type { ResolvedProvider } from './provider-spec.js';

/** A provider as `GET …/providers` and `GET …/provider/{name}` answer it. */
export function providerResponse(p: ResolvedProvider): ProviderResponse {
  const body: ProviderResponse = {
    name: p.name,
    builtin: p.builtin,
    city_level: p.city_level,
    origin: p.origin,
    display_name: p.display_name,
    command: p.command,
    args: [...p.args],
    env: { ...p.env },
    protocol: p.protocol,
    runtime: p.runtime,
    prompt_mode: p.prompt_mode,
    ready_delay_ms: p.ready_delay_ms,
    quiet_ms: p.quiet_ms,
    permission_modes: Object.fromEntries(Object.entries(p.permission_modes).map(([m, a]) => [m, [...a]])),
    option_defaults: { ...p.option_defaults },
    options_schema: Object.fromEntries(
      Object.entries(p.options_schema).map(([key, o]) => [
        key,
        { label: o.label, type: o.type, args: [...o.args], ...(o.choices ? { choices: [...o.choices] } : {}) },
      ]),
    ),
    context_windows: { ...p.context_windows },
    process_names: [...p.process_names],
  };
  if (p.prompt_flag !== undefined) body.prompt_flag = p.prompt_flag;
  if (p.resume_args !== undefined) body.resume_args = [...p.resume_args];
  if (p.system_prompt_args !== undefined) body.system_prompt_args = [...p.system_prompt_args];
  if (p.settings_args !== undefined) body.settings_args = [...p.settings_args];
  if (p.ready_prompt_prefix !== undefined) body.ready_prompt_prefix = p.ready_prompt_prefix;
  if (p.screen_rules !== undefined) body.screen_rules = p.screen_rules;
  if (p.pending_pattern !== undefined) body.pending_pattern = p.pending_pattern;
  if (p.default_permission_mode !== undefined) body.default_permission_mode = p.default_permission_mode;
  return body;
}

/**
 * A provider as a browser may see it: its names, protocol, permission mode names, option defaults and the options
 * it offers (the permission mode among them) — never the command, its arguments, flags or environment.
 */
export function providerPublicResponse(p: ResolvedProvider): ProviderPublicResponse {
  const modes = Object.keys(p.permission_modes);
  const mode = p.default_permission_mode;
  const body: ProviderPublicResponse = {
    name: p.name,
    builtin: p.builtin,
    city_level: p.city_level,
    display_name: p.display_name,
    protocol: p.protocol,
    permission_modes: modes,
    effective_defaults: { ...p.option_defaults, ...(mode !== undefined ? { permission_mode: mode } : {}) },
    options_schema: optionsSchemaView(p),
  };
  if (mode !== undefined) body.default_permission_mode = mode;
  return body;
}
