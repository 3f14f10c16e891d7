import { expect } from 'chai';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';

/**
 * The controller's layer order (CONTROLLER_LAYERS in eslint.config.js, docs/architecture/controller.md), checked
 * by ESLint itself with the project's real config on small snippets placed in the controller's folders. Type
 * information is left out (the rule needs none), so each snippet is linted in milliseconds.
 */
const ROOT = new URL('../../', import.meta.url).pathname;
const RULE = '@typescript-eslint/no-restricted-imports';
let eslint: ESLint;

/** The layer-rule messages ESLint gives `code` as the file `path` (relative to the project). */
async function layerErrors(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: `${ROOT}${path}` });
  return result.messages.filter((m) => m.ruleId === RULE).map((m) => m.message);
}

describe('controller layers (eslint.config.js)', () => {
  before(() => {
    eslint = new ESLint({ cwd: ROOT, overrideConfig: [tseslint.configs.disableTypeChecked] });
  });

  it('refuses a domain importing a domain above it, type imports and re-exports too', async () => {
    const up = [
      ['controller/worktrees/probe.ts', "import type { SessionRecord } from '../sessions/session-store.js';"],
      ['controller/sessions/probe.ts', "import { AgentTick } from '../agents/tick.js';"],
      ['controller/molecules/probe.ts', "export { ROUTED_TO } from '../agents/work-board.js';"],
      ['controller/config-schema/probe.ts', "import type { ComposedConfig } from '../config/compose.js';"],
      ['controller/formulas/probe.ts', "import type { MoleculeEngine } from '../molecules/molecule-engine.js';"],
      ['controller/usage/probe.ts', "import type { SessionRecord } from '../sessions/session-store.js';"],
      ['controller/agent-catalog/probe.ts', "import type { Session } from '../sessions/session.js';"],
      ['controller/webhooks/probe.ts', "import { loadConfig } from '../config/config-in-use.js';"],
      ['controller/waits/probe.ts', "import type { MoleculeEngine } from '../molecules/molecule-engine.js';"],
    ];
    for (const [path, code] of up) {
      const errors = await layerErrors(path, `${code}\nexport const x = 1;\n`);
      expect(errors, `${path}: ${code}`).to.have.length(1);
      expect(errors[0]).to.include('may import only the controller');
    }
  });

  it('lets a domain import the layers below it and its own folder', async () => {
    const down = [
      ['controller/sessions/probe.ts', "import type { SessionWorktrees } from '../worktrees/session-worktrees.js';"],
      ['controller/agents/probe.ts', "import type { SessionService } from '../sessions/session-service.js';"],
      ['controller/molecules/probe.ts', "import { ROUTED_TO } from '../beads/work-schema.js';"],
      ['controller/config/probe.ts', "import type { PackEditor } from './pack-editor.js';"],
      ['controller/orders/probe.ts', "import { CommandRunner } from '../commands.js';"],
      ['controller/sessions/pipe/probe.ts', "import type { SessionRecord } from '../session-store.js';"],
    ];
    for (const [path, code] of down) {
      expect(await layerErrors(path, `${code}\nexport const x = 1;\n`), `${path}: ${code}`).to.deep.equal([]);
    }
  });

  it('counts the folders of a nested file from the controller, not from its own folder', async () => {
    const errors = await layerErrors(
      'controller/sessions/tmux/probe.ts',
      "import type { AgentTick } from '../../agents/tick.js';\nexport const x = 1;\n",
    );
    expect(errors).to.have.length(1);
  });

  it('keeps the root files, routes and server in their places', async () => {
    const cases: [string, string, number][] = [
      ['controller/clock.ts', "import type { CityRuntime } from './city-runtime.js';", 1],
      ['controller/beads/probe.ts', "import type { CityRuntime } from '../city-runtime.js';", 1],
      ['controller/agents/probe.ts', "import { x } from '../api/ioc.js';", 1],
      ['controller/api/probe.ts', "import { x } from '../http/app.js';", 1],
      ['controller/http/probe.ts', "import { assembleCity } from '../assemble-city.js';", 1],
      ['controller/assemble-city.ts', "import { run } from './main.js';", 1],
      ['controller/main.ts', "import { assembleCity } from './assemble-city.js';", 0],
      // http/ reaches a domain through CityRuntime, type imports or the wire views.
      ['controller/http/probe.ts', "import { SessionService } from '../sessions/session-service.js';", 1],
      ['controller/http/probe.ts', "import type { SessionService } from '../sessions/session-service.js';", 0],
      ['controller/http/probe.ts', "import { toEntry } from '../sessions/transcript.js';", 0],
    ];
    for (const [path, code, count] of cases) {
      expect(await layerErrors(path, `${code}\nexport const x = 1;\n`), `${path}: ${code}`).to.have.length(count);
    }
  });
});
