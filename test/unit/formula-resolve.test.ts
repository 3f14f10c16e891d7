import { expect } from 'chai';
import { compileFormula } from '../../controller/formulas/formula-compile.js';
import { parseFormula, type FormulaDef } from '../../controller/formulas/formula-file.js';
import { resolveFormula, type FormulaLookup } from '../../controller/formulas/formula-resolve.js';
import { checkFormula } from '../../controller/formulas/formula-catalog.js';

/** Formulas by name, parsed and resolved against each other (as the catalog does, without files). */
function library(texts: Record<string, string>): FormulaLookup {
  const lookup: FormulaLookup = (name) => {
    const text = texts[name];
    if (text === undefined) return { problem: 'no formula of that name in this city' };
    const parsed = parseFormula(text, `formulas/${name}.toml`, name);
    expect(parsed.errors, name).to.deep.equal([]);
    return { def: resolveFormula(parsed.formula!, lookup).def };
  };
  return lookup;
}

function resolve(text: string, others: Record<string, string> = {}): { def: FormulaDef; errors: string[] } {
  const parsed = parseFormula(text, 'formulas/f.toml', 'f');
  expect(parsed.errors).to.deep.equal([]);
  return resolveFormula(parsed.formula!, library(others));
}

const needsOf = (steps: { id: string; needs: string[] }[]) => Object.fromEntries(steps.map((s) => [s.id, s.needs]));

const BASE = `
description = "The base"
[vars]
base_branch = "main"
setup_command = { default = "npm ci", description = "set up" }
[[steps]]
id = "load-context"
title = "Load"
[[steps]]
id = "implement"
title = "Implement on {{base_branch}}"
needs = ["load-context"]
[[steps]]
id = "self-review"
title = "Review"
needs = ["implement"]
`;

describe('formula extends and expansions (unit)', function () {
  it('extends: the parent’s vars and steps come first; a child step of the same id replaces it in place', function () {
    const { def, errors } = resolve(
      `
extends = ["base"]
[vars]
base_branch = "develop"
[[steps]]
id = "implement"
title = "Implement directly"
needs = ["load-context"]
[[steps]]
id = "commit"
title = "Commit after {{setup_command}}"
needs = ["self-review"]
`,
      { base: BASE },
    );
    expect(errors).to.deep.equal([]);
    expect(def.steps.map((s) => `${s.id}: ${s.title}`)).to.deep.equal([
      'load-context: Load',
      'implement: Implement directly',
      'self-review: Review',
      'commit: Commit after {{setup_command}}',
    ]);
    expect(def.vars.map((v) => `${v.name}=${v.default}`)).to.deep.equal([
      'base_branch=develop',
      'setup_command=npm ci',
    ]);
    expect(def.description).to.equal('The base');
    const { compiled } = compileFormula(def, {}, 'run');
    expect(compiled!.nodes.find((n) => n.id === 'commit')!.title).to.equal('Commit after npm ci');
  });

  it('extends: several parents in order (the first to declare a var wins); grandparents resolve through', function () {
    const { def, errors } = resolve('extends = ["mid", "other"]\n', {
      mid: 'extends = ["base"]\n[vars]\nsetup_command = "make"\n[[steps]]\nid = "extra"\ntitle = "Extra"\n',
      other: '[vars]\nsetup_command = "never"\nflavour = "x"\n[[steps]]\nid = "tail"\ntitle = "Tail"\n',
      base: BASE,
    });
    expect(errors).to.deep.equal([]);
    expect(def.steps.map((s) => s.id)).to.deep.equal(['load-context', 'implement', 'self-review', 'extra', 'tail']);
    expect(Object.fromEntries(def.vars.map((v) => [v.name, v.default]))).to.deep.equal({
      base_branch: 'main',
      setup_command: 'make',
      flavour: 'x',
    });
  });

  it('extends: a missing parent and a cycle are errors naming the file and the key', function () {
    expect(resolve('extends = ["nowhere"]\n').errors).to.deep.equal([
      'formulas/f.toml: extends: nowhere: no formula of that name in this city',
    ]);
    const text = 'extends = ["a"]\n[[steps]]\nid = "x"\ntitle = "X"\n';
    const lookup: FormulaLookup = (name) =>
      name === 'a' ? { problem: 'a cycle (f → a → f)' } : { problem: 'no formula of that name in this city' };
    const checked = checkFormula(text, 'formulas/f.toml', 'f', lookup);
    expect(checked.def).to.equal(undefined);
    expect(checked.errors).to.deep.equal(['formulas/f.toml: extends: a: a cycle (f → a → f)']);
  });

  it('a formula with no steps of its own is fine when it extends one; without, it is an error', function () {
    expect(checkFormula('extends = ["base"]\n', 'formulas/f.toml', 'f', library({ base: BASE })).errors).to.deep.equal(
      [],
    );
    expect(checkFormula('description = "x"\n', 'formulas/f.toml', 'f').errors.join('\n')).to.include(
      'a formula needs at least one [[steps]] (or extends another)',
    );
  });

  const RULE = `
formula = "rule"
type = "expansion"
[vars]
gate = "lint"
[[template]]
id = "{target}.draft"
title = "Draft {target.title}"
[[template]]
id = "{target}.{gate}"
title = "Run {{gate}} on {target}"
needs = ["{target}.draft"]
`;

  it('compose.expand: the target becomes the template, taking its needs; what needed it needs the last step', function () {
    const { def, errors } = resolve(
      `
[[steps]]
id = "plan"
title = "Plan"
[[steps]]
id = "build"
title = "Build it"
needs = ["plan"]
[[steps]]
id = "ship"
title = "Ship"
needs = ["build"]
[[compose.expand]]
target = "build"
with = "rule"
vars = { gate = "test" }
`,
      { rule: RULE },
    );
    expect(errors).to.deep.equal([]);
    expect(needsOf(def.steps)).to.deep.equal({
      plan: [],
      'build.draft': ['plan'],
      'build.test': ['build.draft'],
      ship: ['build.test'],
    });
    expect(def.steps.map((s) => s.title)).to.deep.equal(['Plan', 'Draft Build it', 'Run test on build', 'Ship']);
  });

  it('compose.map expands every step whose id matches; a step’s own expand inlines with expand_vars', function () {
    const mapped = resolve(
      `
[[steps]]
id = "impl-a"
title = "A"
[[steps]]
id = "impl-b"
title = "B"
[[steps]]
id = "docs"
title = "Docs"
expand = "rule"
expand_vars = { gate = "spell" }
[[compose.map]]
select = "impl-*"
with = "rule"
`,
      { rule: RULE },
    );
    expect(mapped.errors).to.deep.equal([]);
    expect(mapped.def.steps.map((s) => s.id)).to.deep.equal([
      'impl-a.draft',
      'impl-a.lint',
      'impl-b.draft',
      'impl-b.lint',
      'docs.draft',
      'docs.spell',
    ]);
    const { compiled, errors } = compileFormula(mapped.def, {}, 'run');
    expect(errors).to.deep.equal([]);
    expect(compiled!.nodes.map((n) => n.id)).to.include('f.workflow-finalize');
  });

  it('expansions: a missing target, a formula that is not an expansion and runaway nesting are errors', function () {
    const errors = resolve(
      `
[[steps]]
id = "a"
title = "A"
expand = "loop"
[[steps]]
id = "b"
title = "B"
expand = "plain"
[[compose.expand]]
target = "nope"
with = "rule"
`,
      {
        rule: RULE,
        plain: '[[steps]]\nid = "x"\ntitle = "X"\n',
        loop: 'type = "expansion"\n[[template]]\nid = "{target}.again"\ntitle = "Again"\nexpand = "loop"\n',
      },
    ).errors;
    expect(errors).to.deep.equal([
      'formulas/f.toml: compose.expand[0].target: no step "nope"',
      'formulas/f.toml: step "a.again.again.again.again.again": expand: expansions nest more than 5 deep (does loop expand itself?)',
      'formulas/f.toml: step "b": expand: plain is not an expansion formula (type = "expansion" with [[template]] steps)',
    ]);
  });
});
