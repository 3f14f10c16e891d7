import { existsSync, mkdirSync } from 'node:fs';
import type { ResolvedProvider } from '../providers/provider-spec.js';
import type { SessionRecord } from './session-store.js';

/** What a session's program is started with besides its provider's command. */
export interface ProgramPlace {
  cityName: string;
  cityRoot: string;
  env: NodeJS.ProcessEnv;
}

/** The program's environment: the controller's, the provider's, and the `CTL_*` names of where it runs. */
export function sessionEnvironment(
  place: ProgramPlace,
  record: SessionRecord,
  provider: ResolvedProvider,
): NodeJS.ProcessEnv {
  return {
    ...place.env,
    ...provider.env,
    CTL_CITY: place.cityName,
    CTL_CITY_ROOT: place.cityRoot,
    CTL_SESSION_ID: record.id,
    CTL_SESSION_NAME: record.session_name,
    CTL_TEMPLATE: record.template,
    CTL_PROVIDER: provider.name,
  };
}

/** An agent's directory inside the city is made when missing; one outside it must exist. */
export function ensureWorkDir(dir: string, cityRoot: string): void {
  if (existsSync(dir)) return;
  if (dir !== cityRoot && !dir.startsWith(`${cityRoot}/`))
    throw new Error(`its working directory ${dir} does not exist`);
  mkdirSync(dir, { recursive: true });
}
