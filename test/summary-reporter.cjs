// Prints the closing "N passed, N failed" line that CI looks for.
const Mocha = require('mocha');
const { EVENT_RUN_END } = Mocha.Runner.constants;
module.exports = class SummaryReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    runner.once(EVENT_RUN_END, () => {
      const s = runner.stats;
      process.stdout.write(`${s.passes} passed, ${s.failures} failed${s.pending ? `, ${s.pending} skipped` : ''}\n`);
    });
  }
};
