import type { CommandDef } from 'citty';
import { call } from './_api.js';
import { command } from './_command.js';
import { inCityFlags } from './_flags.js';
import { json, line } from './_output.js';
import { inCity } from './_scope.js';
import type { Api, FetchResult } from './_types.js';

/**
 * A command that acts on one thing of the city in scope, named by its id (`ctl bead close ID`, `ctl mail archive
 * ID`): one request, then one line for people, or the API's answer as JSON with `--json`.
 */
export function idAction<T>(spec: {
  name: string;
  description: string;
  examples: string[];
  /** What the ID argument names (`Bead id`). */
  id: string;
  /** The request, for this id in this city. */
  request(api: Api, path: { cityName: string; id: string }): Promise<FetchResult<T>>;
  /** What is said when it is done. */
  done(data: T, id: string): string;
}): CommandDef {
  return command({
    name: spec.name,
    description: spec.description,
    examples: spec.examples,
    args: { id: { type: 'positional', description: spec.id, required: true }, ...inCityFlags },
    async run({ args }) {
      const { api, city } = await inCity(args);
      const { data } = await call(api, spec.request(api, { cityName: city.name, id: args.id }));
      if (args.json) return json(data);
      line(spec.done(data, args.id));
    },
  }) as CommandDef;
}
