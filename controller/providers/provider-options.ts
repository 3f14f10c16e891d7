import type { ProviderOptionDTO } from '../../shared/dto/providers.js';
import { Problem } from '../../shared/http/problem.js';

/**
 * One option a provider offers its sessions (the model, a reasoning effort, a turn limit), as preset data: how a
 * person chooses it and the arguments that pass it to the program.
 */
export interface OptionSpec {
  label: string;
  /** `select`: one of `choices`; `string`: any text without line breaks; `integer`: a whole number of 1 or more. */
  type: 'select' | 'string' | 'integer';
  /** The arguments that pass a value, `{value}` standing for it (`["--model", "{value}"]`). */
  args: string[];
  /** A `select`'s values, in the order a person is offered them. */
  choices?: string[];
}

/** The option a provider's permission modes are (`permission_modes`), chosen like any other. */
export const PERMISSION_MODE_OPTION = 'permission_mode';

/** What option validation needs of a provider. */
export interface OptionHolder {
  name: string;
  options_schema: Record<string, OptionSpec>;
  permission_modes: Record<string, string[]>;
}

/** The keys a provider takes: its options, and `permission_mode` when it has modes. */
export function optionKeys(provider: OptionHolder): string[] {
  const keys = Object.keys(provider.options_schema);
  if (Object.keys(provider.permission_modes).length > 0) keys.push(PERMISSION_MODE_OPTION);
  return keys;
}

/**
 * What is wrong with an option for this provider, in words naming it, or undefined when the provider offers it
 * and the value is one it takes.
 */
export function optionProblem(provider: OptionHolder, key: string, value: string): string | undefined {
  if (key === PERMISSION_MODE_OPTION && Object.keys(provider.permission_modes).length > 0) {
    if (Object.hasOwn(provider.permission_modes, value)) return undefined;
    return `${key} ${JSON.stringify(value)} is not one of ${provider.name}'s permission modes (${Object.keys(provider.permission_modes).join(', ')})`;
  }
  const spec = Object.hasOwn(provider.options_schema, key) ? provider.options_schema[key] : undefined;
  if (!spec) {
    const keys = optionKeys(provider);
    return `provider ${provider.name} has no option ${key} (${keys.length ? `it has ${keys.join(', ')}` : 'it has none'})`;
  }
  switch (spec.type) {
    case 'select':
      if (spec.choices?.includes(value)) return undefined;
      return `${key} ${JSON.stringify(value)} is not one of ${provider.name}'s choices (${(spec.choices ?? []).join(', ')})`;
    case 'integer':
      if (/^[1-9][0-9]{0,8}$/.test(value)) return undefined;
      return `${key} must be a whole number of 1 or more (got ${JSON.stringify(value)})`;
    case 'string':
      if (value.trim() !== '' && !/[\r\n\0]/.test(value)) return undefined;
      return `${key} must be a non-empty single line (got ${JSON.stringify(value)})`;
  }
}

/** Every problem of a set of options, each with its key (in the order given). */
export function optionProblems(
  provider: OptionHolder,
  options: Record<string, string>,
): { key: string; message: string }[] {
  const problems: { key: string; message: string }[] = [];
  for (const [key, value] of Object.entries(options)) {
    const message = optionProblem(provider, key, value);
    if (message !== undefined) problems.push({ key, message });
  }
  return problems;
}

/**
 * The arguments that pass options to the program, in the order the provider lists its options (a key it does
 * not offer passes nothing: the options were checked when they were given). `permission_mode` is not among them:
 * the permission mode has arguments of its own (`permission_modes`), and can change while the program runs.
 */
export function optionArgs(provider: OptionHolder, options: Record<string, string>): string[] {
  const args: string[] = [];
  for (const [key, spec] of Object.entries(provider.options_schema)) {
    const value = options[key];
    if (value === undefined) continue;
    for (const arg of spec.args) args.push(arg.replaceAll('{value}', value));
  }
  return args;
}

/**
 * The options a session runs with: the provider's `option_defaults`, then its agent's, then its own — each
 * later one winning key by key.
 */
export function effectiveOptions(...layers: (Record<string, string> | undefined)[]): Record<string, string> {
  return Object.assign({}, ...layers.filter(Boolean)) as Record<string, string>;
}

/** The options as a browser may see them: keys, labels, choices and defaults, never the arguments behind them. */
export function optionsSchemaView(
  provider: OptionHolder & { option_defaults: Record<string, string>; default_permission_mode?: string },
): ProviderOptionDTO[] {
  const views: ProviderOptionDTO[] = Object.entries(provider.options_schema).map(([key, spec]) => ({
    key,
    label: spec.label,
    type: spec.type,
    default: provider.option_defaults[key] ?? '',
    choices: (spec.choices ?? []).map((value) => ({ value, label: value })),
  }));
  const modes = Object.keys(provider.permission_modes);
  if (modes.length > 0) {
    views.push({
      key: PERMISSION_MODE_OPTION,
      label: 'Permission mode',
      type: 'select',
      default: provider.option_defaults[PERMISSION_MODE_OPTION] ?? provider.default_permission_mode ?? modes[0]!,
      choices: modes.map((m) => ({ value: m, label: m })),
    });
  }
  return views;
}

/**
 * A session's options as a request gives them (`options`, and `permission_mode` beside them), checked: one the
 * provider does not offer, or a value it does not take, is a 422 naming each. The permission mode, chosen either
 * way, is returned apart (the session's own: it can change while the program runs).
 */
export function requestedOptions(
  provider: OptionHolder,
  given: Record<string, string> | undefined,
  permissionMode: string | undefined,
): { options: Record<string, string>; permissionMode?: string } {
  const options = { ...given };
  const problems = optionProblems(provider, options);
  if (problems.length > 0) {
    throw new Problem('validation-failed', `invalid: ${problems.map((p) => p.message).join('; ')}`, {
      errors: problems.map((p) => ({ location: `body.options.${p.key}`, message: p.message, value: options[p.key] })),
    });
  }
  const inOptions = options[PERMISSION_MODE_OPTION];
  delete options[PERMISSION_MODE_OPTION];
  if (permissionMode !== undefined && inOptions !== undefined && permissionMode !== inOptions) {
    const message = `permission_mode ${permissionMode} and options.permission_mode ${inOptions} disagree`;
    throw new Problem('validation-failed', `invalid: ${message}`, {
      errors: [{ location: 'body.options.permission_mode', message, value: inOptions }],
    });
  }
  const mode = permissionMode ?? inOptions;
  return { options, ...(mode !== undefined ? { permissionMode: mode } : {}) };
}
