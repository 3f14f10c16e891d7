import { expect } from 'chai';
import { parseCityConfig } from '../../shared/config/city-config.js';
import type { ConfigProblem } from '../../controller/config/compose.js';
import { applyPatches } from '../../controller/config/patches.js';
import { isPreset } from '../../controller/config/config-views.js';

// `[[patches.provider]]` names a provider of the city or a built-in preset; a name every object inherits
// (`constructor`) is neither.

describe('provider patches and inherited property names', () => {
  it('reports a patch of a provider named constructor that the city does not have', () => {
    const config = parseCityConfig('[[patches.provider]]\nname = "constructor"\ncommand = "/bin/cat"\n', 'city.toml');
    const problems: ConfigProblem[] = [];
    const patched = applyPatches(config, [], problems);
    expect(problems.map((p) => p.message)).to.deep.equal([
      'patches.provider[0]: no provider named constructor to patch',
    ]);
    expect(patched.providers.has('constructor')).to.equal(false);
    expect(Object.hasOwn(config.providers, 'constructor')).to.equal(false);
  });

  it('does not take an inherited property name for a built-in preset', () => {
    expect(isPreset('constructor')).to.equal(false);
    expect(isPreset('claude')).to.equal(true);
  });
});
