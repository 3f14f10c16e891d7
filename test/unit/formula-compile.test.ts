import { expect } from 'chai';
import {
  compiledSize,
  compileFormula,
  holds,
  MAX_COMPILED_NODES,
  MAX_FILLED_CHARS,
} from '../../controller/formulas/formula-compile.js';
import { parseFormula } from '../../controller/formulas/formula-file.js';
import type { GraphNode } from '../../controller/formulas/formula-compile.js';
import { bodySinks, bondItems, itemVars, untilHolds } from '../../controller/molecules/node-beads.js';
import type { Bead } from '../../shared/dto/beads.js';

function compile(text: string, vars: Record<string, string> = {}, mode: 'run' | 'validate' = 'run') {
  const parsed = parseFormula(text, 'formulas/f.toml', 'f');
  if (!parsed.formula)
    return { errors: parsed.errors, nodes: [] as { id: string; kind: string; needs: string[]; title: string }[] };
  const { compiled, errors } = compileFormula(parsed.formula, vars, mode, {
    attached_bead_id: 'ct-7',
    target: 'worker',
  });
  return { errors: [...parsed.errors, ...errors], nodes: parsed.errors.length ? [] : (compiled?.nodes ?? []) };
}

const needsOf = (nodes: { id: string; needs: string[] }[]) =>
  Object.fromEntries(nodes.map((n) => [n.id, [...n.needs].sort()]));

describe('formula compiler (unit)', function () {
  it('children: a group closes after its children, which start after what the group needs', function () {
    const { errors, nodes } = compile(`
[[steps]]
id = "plan"
title = "Plan"

[[steps]]
id = "build"
title = "Build"
needs = ["plan"]
[[steps.children]]
id = "code"
title = "Code"
[[steps.children]]
id = "test"
title = "Test"
needs = ["code"]

[[steps]]
id = "ship"
title = "Ship"
needs = ["build"]
`);
    expect(errors).to.deep.equal([]);
    expect(needsOf(nodes)).to.deep.equal({
      plan: [],
      code: ['plan'],
      test: ['code'],
      build: ['code', 'test'],
      ship: ['build'],
      'f.workflow-finalize': ['ship'],
    });
    expect(nodes.find((n) => n.id === 'build')!.kind).to.equal('group');
  });

  it('a loop over a range binds its var and chains iterations; a check adds a check node dependents wait for', function () {
    const { errors, nodes } = compile(`
[[steps]]
id = "rounds"
title = "Rounds"
[steps.loop]
range = "2..3"
var = "n"
[[steps.loop.body]]
id = "draft"
title = "Draft {{n}} for {{attached_bead_id}}"
[[steps.loop.body]]
id = "review"
title = "Review {{n}}"
needs = ["draft"]
[steps.loop.body.retry]
max_attempts = 2
on_exhausted = "soft_fail"
`);
    expect(errors).to.deep.equal([]);
    expect(nodes.map((n) => n.id)).to.deep.equal([
      'rounds.iter2.draft',
      'rounds.iter2.review',
      'rounds.iter2.review.check',
      'rounds.iter3.draft',
      'rounds.iter3.review',
      'rounds.iter3.review.check',
      'rounds',
      'f.workflow-finalize',
    ]);
    expect(nodes[0].title).to.equal('Draft 2 for ct-7');
    expect(needsOf(nodes)['rounds.iter3.draft']).to.deep.equal(['rounds.iter2.review.check']);
    expect(needsOf(nodes)['f.workflow-finalize']).to.deep.equal(['rounds']);
  });

  it('a chain of dropped steps passes on what the first needed; validate keeps every step', function () {
    const text = `
[vars]
fast = "yes"
[[steps]]
id = "a"
title = "A"
[[steps]]
id = "b"
title = "B"
needs = ["a"]
condition = "!{{fast}}"
[[steps]]
id = "c"
title = "C"
needs = ["b"]
condition = "{{fast}} != yes"
[[steps]]
id = "d"
title = "D"
needs = ["c"]
`;
    expect(needsOf(compile(text).nodes).d).to.deep.equal(['a']);
    expect(compile(text, {}, 'validate').nodes.map((n) => n.id)).to.deep.equal([
      'a',
      'b',
      'c',
      'd',
      'f.workflow-finalize',
    ]);
    expect(needsOf(compile(text, { fast: 'no' }).nodes).d).to.deep.equal(['c']);
  });

  it('names every error: duplicates, bad fields, a required var with a default, a self-need, unknown builtins', function () {
    const { errors } = compile(
      `
[vars]
who = { required = true, default = "x" }
target = "me"
[[steps]]
id = "a"
title = "A"
needs = ["a"]
priority = 9
[[steps]]
id = "a"
title = "again"
[[steps]]
id = "g"
gate = { type = "timer" }
`,
      {},
      'validate',
    );
    const text = errors.join('\n');
    expect(text).to.include('formulas/f.toml: var "who": required: a required var cannot have a default');
    expect(text).to.include('formulas/f.toml: step "a": priority: must be an integer from 0 to 4');
    expect(text).to.include('formulas/f.toml: step "g": gate.duration: a timer gate needs a duration');
    expect(compile('[[steps]]\nid = "a"\ntitle = "A"\nneeds = ["a"]\n').errors.join('\n')).to.include(
      'a step cannot need itself',
    );
    expect(
      compile('[[steps]]\nid = "a"\ntitle = "A"\n[[steps]]\nid = "a"\ntitle = "B"\n').errors.join('\n'),
    ).to.include('step "a": id: is used by another step');
    // A formula may declare a builtin (the reference's packs do): the run's own value beats its default.
    const declared = compile('[vars]\ntarget = "x"\n[[steps]]\nid = "a"\ntitle = "For {{target}}"\n');
    expect(declared.errors).to.deep.equal([]);
    expect(declared.nodes[0].title).to.equal('For worker');
  });

  it('counts the compiled size before expanding: nested loops multiply, children and checks add', function () {
    const formula = (count: number) => `
[[steps]]
id = "a"
title = "A"
check = { command = "true" }
[[steps]]
id = "g"
title = "G"
[[steps.children]]
id = "c"
title = "C"
[[steps]]
id = "l"
title = "L"
[steps.loop]
count = ${count}
[[steps.loop.body]]
id = "m"
title = "M"
[steps.loop.body.loop]
range = "1..${count}"
[[steps.loop.body.loop.body]]
id = "x"
title = "X"
`;
    const parsed = parseFormula(formula(3), 'formulas/f.toml', 'f');
    // a + its check, g + c, l + 3 × (m + 3 × x): 2 + 2 + 1 + 12.
    expect(compiledSize(parsed.formula!.steps)).to.deep.equal({ nodes: 17, chain: [3, 3], where: 'step "l"' });
    expect(compile(formula(3)).nodes).to.have.length(17 + 1); // and finalize
    const huge = compile(formula(200));
    expect(huge.nodes).to.deep.equal([]);
    expect(huge.errors).to.deep.equal([
      'formulas/f.toml: step "l": loop: 200 × 200 = 40,000 iterations of nested loops; the formula expands to ' +
        `40,205 steps, which exceeds the limit of ${MAX_COMPILED_NODES.toLocaleString('en-US')} steps per formula`,
    ]);
  });

  it('the texts a launch’s vars fill are bounded all together: a large var in many steps is refused', function () {
    const formula = (count: number) =>
      `[vars]\nnote = ""\n[[steps]]\nid = "l"\ntitle = "L"\n[steps.loop]\ncount = ${count}\n` +
      `[[steps.loop.body]]\nid = "m"\ntitle = "M"\ndescription = "{{note}} and {{note}}"\n`;
    const note = 'n'.repeat(64 * 1024);
    // 100 steps × 2 × 64 Ki = 12.5 Mi characters: under the bound; 200 steps would be 25 Mi.
    expect(compile(formula(100), { note }).errors).to.deep.equal([]);
    const refused = compile(formula(200), { note });
    expect(refused.nodes).to.deep.equal([]);
    expect(refused.errors).to.have.length(1);
    expect(refused.errors[0]).to.match(
      new RegExp(
        `^formulas/f\\.toml: step "l\\.iter\\d+\\.m": description: the formula's texts fill to more than ${MAX_FILLED_CHARS} characters`,
      ),
    );
  });

  it('conditions: ==, !=, negation and truthiness', function () {
    expect(holds('prod == prod')).to.equal(true);
    expect(holds('"prod" == prod')).to.equal(true);
    expect(holds('prod != prod')).to.equal(false);
    expect(holds('off')).to.equal(false);
    expect(holds('!0')).to.equal(true);
    expect(holds('yes')).to.equal(true);
  });
});

describe('loop.until: a runtime loop (unit)', function () {
  const LOOP = `
[[steps]]
id = "plan"
title = "Plan"
[[steps]]
id = "polish"
title = "Polish"
needs = ["plan"]
[steps.loop]
until = "review.output.approved == yes"
max = 3
[[steps.loop.body]]
id = "draft"
title = "Draft"
[[steps.loop.body]]
id = "review"
title = "Review"
needs = ["draft"]
[[steps]]
id = "ship"
title = "Ship"
needs = ["polish"]
`;

  it('compiles its first iteration and keeps the body, ids relative, for the engine to make the next from', function () {
    const parsed = parseFormula(LOOP, 'formulas/f.toml', 'f');
    expect(parsed.errors).to.deep.equal([]);
    const { compiled, errors } = compileFormula(parsed.formula!, {}, 'run');
    expect(errors).to.deep.equal([]);
    expect(needsOf(compiled!.nodes)).to.deep.equal({
      plan: [],
      'polish.iter1.draft': ['plan'],
      'polish.iter1.review': ['polish.iter1.draft'],
      polish: ['polish.iter1.draft', 'polish.iter1.review'],
      ship: ['polish'],
      'f.workflow-finalize': ['ship'],
    });
    const loop = compiled!.nodes.find((n) => n.id === 'polish')!.loop!;
    expect(loop).to.include({ until: 'review.output.approved == yes', max: 3, prefix: 'polish.iter1.' });
    expect(loop.body.map((n) => [n.id, n.needs])).to.deep.equal([
      ['draft', []],
      ['review', ['draft']],
    ]);
  });

  it('until holds on a body step’s status or the output its agent set; iterations follow the last one’s sinks', function () {
    const body = [
      { id: 'draft', kind: 'step', needs: [] },
      { id: 'review', kind: 'step', needs: ['draft'] },
    ] as unknown as GraphNode[];
    const bead = (status: string, metadata: Record<string, string>) => ({ status, metadata }) as unknown as Bead;
    const beads = new Map([
      ['draft', bead('closed', { 'ctl.outcome': 'pass' })],
      ['review', bead('closed', { approved: 'no', 'ctl.outcome': 'fail' })],
    ]);
    expect(untilHolds('review.output.approved == yes', body, beads)).to.equal(false);
    expect(untilHolds("review.output.approved != 'yes'", body, beads)).to.equal(true);
    expect(untilHolds('step.status == failed', body, beads)).to.equal(true);
    expect(untilHolds('draft.status == complete', body, beads)).to.equal(true);
    beads.set('review', bead('closed', { 'output.approved': 'yes' }));
    expect(untilHolds('review.output.approved == yes', body, beads)).to.equal(true);
    expect(bodySinks(body)).to.deep.equal(['review']);
  });

  it('refuses an until without max, a bad condition, and until beside count', function () {
    const errors = (loop: string) =>
      parseFormula(
        `[[steps]]\nid = "l"\ntitle = "L"\n[steps.loop]\n${loop}\n[[steps.loop.body]]\nid = "b"\ntitle = "B"\n`,
        'formulas/f.toml',
        'f',
      ).errors;
    expect(errors('until = "b.status == complete"')).to.deep.equal([
      'formulas/f.toml: step "l": loop.max: is required with until (the most iterations that run)',
    ]);
    expect(errors('until = "whenever"\nmax = 2')[0]).to.include('loop.until: must be <step>.status');
    expect(errors('until = "b.status == complete"\nmax = 2\ncount = 2')).to.deep.equal([
      'formulas/f.toml: step "l": loop: takes one of count, range and until, not count and until',
    ]);
  });
});

describe('on_complete and waits_for: runs poured from a step (unit)', function () {
  it('a step with on_complete gets a bond node its dependents wait for; waits_for adds a children node', function () {
    const { errors, nodes } = compile(`
[vars]
who = "qa"
[[steps]]
id = "survey"
title = "Survey"
on_complete = { for_each = "output.files", bond = "per-file", vars = { file = "{item}", by = "{{who}}" } }
[[steps]]
id = "report"
title = "Report"
needs = ["survey"]
[[steps]]
id = "merge"
title = "Merge"
needs = ["survey"]
waits_for = "all-children"
`);
    expect(errors).to.deep.equal([]);
    expect(needsOf(nodes)).to.deep.equal({
      survey: [],
      'survey.bond': ['survey'],
      'survey.children-all': ['survey.bond'],
      report: ['survey.bond'],
      merge: ['survey.bond', 'survey.children-all'],
      'f.workflow-finalize': ['merge', 'report'],
    });
    const bond = nodes.find((n) => n.id === 'survey.bond') as GraphNode;
    expect(bond.bond).to.deep.equal({
      forEach: 'output.files',
      bond: 'per-file',
      vars: { file: '{item}', by: 'qa' },
      sequential: false,
    });
    expect(
      compile(
        '[[steps]]\nid = "a"\ntitle = "A"\n[[steps]]\nid = "b"\ntitle = "B"\nneeds = ["a"]\nwaits_for = "any-children"\n',
      ).errors,
    ).to.deep.equal(['formulas/f.toml: step "b": waits_for: step "a" bonds no runs (it has no on_complete)']);
  });

  it('on_complete.sequential is kept on the bond node; parallel and sequential together, or not booleans, are errors', function () {
    const step = (on: string) =>
      `[[steps]]\nid = "s"\ntitle = "S"\non_complete = { for_each = "output.x", bond = "b"${on} }\n`;
    const { errors, nodes } = compile(step(', sequential = true'));
    expect(errors).to.deep.equal([]);
    expect((nodes.find((n) => n.id === 's.bond') as GraphNode).bond?.sequential).to.equal(true);
    expect(
      (compile(step(', parallel = true')).nodes.find((n) => n.id === 's.bond') as GraphNode).bond?.sequential,
    ).to.equal(false);
    expect(compile(step(', parallel = true, sequential = true')).errors).to.deep.equal([
      'formulas/f.toml: step "s": on_complete: cannot set both parallel and sequential',
    ]);
    expect(compile(step(', sequential = "yes"')).errors).to.deep.equal([
      'formulas/f.toml: step "s": on_complete.sequential: must be true or false',
    ]);
  });

  it('the items: a JSON array or one a line, from the step’s output or a var; {item.x} and {index} fill the vars', function () {
    const step = { metadata: { files: '["a.ts", "b.ts"]', 'output.people': 'ann\nbob\n' } } as unknown as Bead;
    expect(bondItems('output.files', step, {})).to.deep.equal(['a.ts', 'b.ts']);
    expect(bondItems('output.people', step, {})).to.deep.equal(['ann', 'bob']);
    expect(bondItems('vars.targets', step, { targets: '[{"name": "x", "rig": "web"}]' })).to.deep.equal([
      { name: 'x', rig: 'web' },
    ]);
    expect(bondItems('output.none', step, {})).to.deep.equal([]);
    expect(
      itemVars({ who: '{item.name}@{item.rig}', n: '{index}', all: '{item}' }, { name: 'x', rig: 'web' }, 2),
    ).to.deep.equal({
      who: 'x@web',
      n: '2',
      all: '{"name":"x","rig":"web"}',
    });
  });
});
