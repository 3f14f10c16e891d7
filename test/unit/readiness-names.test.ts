import { expect } from 'chai';
import { Problem } from '../../shared/http/problem.js';
import { ReadinessProber } from '../../shared/readiness.js';

// `?items=` names probes; a name every object inherits (`constructor`, `toString`) names none.

describe('readiness item names', () => {
  it('refuses an inherited property name as an unknown item (a 400), not a probe', async () => {
    const prober = new ReadinessProber({ PATH: '' }, 0);
    expect(prober.isKnown('constructor')).to.equal(false);
    expect(prober.isKnown('claude')).to.equal(true);
    const answer = await prober.readiness('claude,toString', []).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(answer).to.be.instanceOf(Problem);
    expect((answer as Problem).message).to.contain('unknown items: toString');
  });

  it('refuses to probe an inherited property name', async () => {
    const prober = new ReadinessProber({ PATH: '' }, 0);
    const answer = await prober.probe('constructor').then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(String(answer)).to.contain('unknown readiness item constructor');
  });
});
