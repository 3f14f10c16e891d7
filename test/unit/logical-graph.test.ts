import { expect } from 'chai';
import type { Bead } from '../../shared/dto/beads.js';
import type { RunStepStatus } from '../../shared/dto/formulas.js';
import { compileFormula } from '../../controller/formulas/formula-compile.js';
import { parseFormula } from '../../controller/formulas/formula-file.js';
import { logicalGraph } from '../../controller/molecules/logical-graph.js';
import * as K from '../../controller/molecules/molecule-keys.js';

/** A formula's nodes as the beads a run makes of them (ids b-1, b-2 …), the way the molecule engine writes them. */
function runBeads(text: string, status: Record<string, string> = {}): Bead[] {
  const parsed = parseFormula(text, 'formulas/f.toml', 'f');
  const { compiled, errors } = compileFormula(parsed.formula!, {}, 'run');
  expect(errors).to.deep.equal([]);
  const ids = new Map(compiled!.nodes.map((n, i) => [n.id, `b-${i + 1}`]));
  return compiled!.nodes.map((n) => ({
    id: ids.get(n.id)!,
    title: n.title,
    status: status[n.id] ?? 'open',
    issue_type: 'task',
    created_at: '2026-11-26T00:00:00Z',
    metadata: {
      [K.KIND]: n.kind,
      [K.STEP_REF]: n.id,
      [K.ROOT_BEAD_ID]: 'b-0',
      ...(n.scope !== undefined ? { [K.SCOPE_REF]: n.scope } : {}),
      ...(n.checks ? { [K.CHECKS]: ids.get(n.checks)! } : {}),
    },
    dependencies: n.needs.map((d) => ({ issue_id: ids.get(n.id)!, depends_on_id: ids.get(d)!, type: 'blocks' })),
  }));
}

const statusOf = (bead: Bead): RunStepStatus => (bead.status === 'closed' ? 'completed' : 'pending');

const FORMULA = `
[[steps]]
id = "plan"
title = "Plan"
check = { command = "true" }

[[steps]]
id = "build"
title = "Build"
needs = ["plan"]
[[steps.children]]
id = "code"
title = "Code"
[[steps.children]]
id = "rounds"
title = "Rounds"
needs = ["code"]
[steps.children.loop]
count = 2
[[steps.children.loop.body]]
id = "test"
title = "Test"

[[steps]]
id = "ship"
title = "Ship"
needs = ["build"]
`;

describe('a run as its formula was written (unit)', function () {
  it('folds a check into its step, leaves out finalize, and nests groups as scope groups', function () {
    const graph = logicalGraph(runBeads(FORMULA), statusOf);
    expect(graph.nodes.map((n) => [n.id, n.kind, n.scope_group ?? '', n.bead_ids.length])).to.deep.equal([
      ['plan', 'step', '', 2],
      ['code', 'step', 'build', 1],
      ['rounds.iter1.test', 'step', 'rounds', 1],
      ['rounds.iter2.test', 'step', 'rounds', 1],
      ['rounds', 'group', 'build', 1],
      ['build', 'group', '', 1],
      ['ship', 'step', '', 1],
    ]);
    expect(graph.groups).to.deep.equal([
      {
        id: 'rounds',
        title: 'Rounds',
        status: 'pending',
        node_ids: ['rounds.iter1.test', 'rounds.iter2.test'],
        parent: 'build',
      },
      { id: 'build', title: 'Build', status: 'pending', node_ids: ['code', 'rounds'] },
    ]);
    // Order only: a group waiting for its own members (at any depth) is membership, not an edge.
    expect(graph.edges.map((e) => `${e.from}>${e.to}`)).to.have.members([
      'code>plan',
      'rounds.iter1.test>code',
      'rounds.iter2.test>rounds.iter1.test',
      'ship>build',
    ]);
  });

  it('a step whose work is done is not completed until its check is', function () {
    const beads = runBeads(FORMULA, { plan: 'closed' });
    const check = beads.find((b) => b.metadata![K.STEP_REF] === 'plan.check')!;
    expect(logicalGraph(beads, statusOf).nodes[0]).to.include({ id: 'plan', status: 'active' });
    check.status = 'closed';
    expect(logicalGraph(beads, statusOf).nodes[0]).to.include({ id: 'plan', status: 'completed' });
  });
});
