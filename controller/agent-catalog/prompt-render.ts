import type { PromptParts } from '../../shared/config/city-config-types.js';
import { renderPromptTemplate, type TemplateFunctions } from './prompt-template.js';

/** What one session's prompt is rendered for: the values only a session knows, and its city's name. */
export interface SessionPromptValues {
  city: string;
  /** The agent's qualified name (`rig/base` for a rig's agent). */
  agent: string;
  rig: string;
  workDir: string;
  session: string;
  bead: string;
}

/**
 * A templated prompt (`prompt.template.md`) rendered as the reference renders it: the fields the configuration
 * fixes (`parts.values`), the session's own (`.CityName`, `.AgentName`, `.WorkDir`, `.Session`, `.Bead`), the
 * functions its templates call (`cmd`, `basename`) and ctl's older names (`{{ agent }}`, `{{ city }}`, …) as
 * functions. Throws a TemplateError (a TemplateLimitError past a bound of rendering).
 */
export function renderTemplatedPrompt(prompt: string, parts: PromptParts, v: SessionPromptValues): string {
  const data = {
    ...parts.values,
    CityName: v.city,
    AgentName: v.agent,
    WorkDir: v.workDir,
    Session: v.session,
    Bead: v.bead,
  };
  const functions: TemplateFunctions = {
    // The reference's prompts say `{{ cmd }} prime`: here the command is ctl.
    cmd: () => 'ctl',
    basename: (path = '') => path.slice(path.lastIndexOf('/') + 1),
    ...Object.fromEntries(Object.entries(legacyPromptValues(v)).map(([k, value]) => [k, () => value])),
  };
  return renderPromptTemplate(prompt, { library: parts.library, append: parts.append, data, functions });
}

/** The names of ctl's own prompt templates: `{{agent}}`, `{{city}}`, `{{rig}}`, `{{work_dir}}`, `{{session}}`, `{{bead}}`. */
export function legacyPromptValues(v: SessionPromptValues): Record<string, string> {
  return { agent: v.agent, city: v.city, rig: v.rig, work_dir: v.workDir, session: v.session, bead: v.bead };
}
