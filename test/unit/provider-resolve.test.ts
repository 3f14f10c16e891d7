import { expect } from 'chai';
import { resolveCityProviders } from '../../controller/providers/resolve.js';

// Names in `city.toml` are the person's: one that is also a property every object inherits (`constructor`,
// `toString`) is a name like any other, never a built-in preset nor a provider of the city.

describe('provider resolution and inherited property names', () => {
  it('refuses a base naming an inherited property, as a base naming nothing', () => {
    const { resolved, errors } = resolveCityProviders(
      { a: { base: 'builtin:constructor', command: 'x' }, b: { base: 'toString', command: 'x' } },
      {},
      'city.toml',
    );
    expect(resolved.has('a')).to.equal(false);
    expect(errors.get('a')?.message).to.contain('names no built-in provider');
    expect(resolved.has('b')).to.equal(false);
    expect(errors.get('b')?.message).to.contain('names no provider');
  });

  it('resolves a provider named constructor as a city provider', () => {
    const { resolved, errors } = resolveCityProviders({ constructor: { command: 'echo hi' } }, {}, 'city.toml');
    expect([...errors.keys()]).to.deep.equal([]);
    const provider = resolved.get('constructor');
    expect(provider?.builtin).to.equal(false);
    expect(provider?.origin).to.equal('city');
    expect(provider?.command).to.equal('echo hi');
  });
});
