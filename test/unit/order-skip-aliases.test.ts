import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { OrderCatalog } from '../../controller/orders/order-catalog.js';

// An order's `skip_aliases`: its older names, which `[orders] skip` may still name (bare, or under the pack's
// binding) to skip it after it was renamed.
describe("an order's skip_aliases", function () {
  let root: string;
  beforeEach(function () {
    root = mkdtempSync(join(tmpdir(), 'ctl-skip-'));
    mkdirSync(join(root, 'core', 'orders'), { recursive: true });
    writeFileSync(
      join(root, 'core', 'orders', 'reaper.toml'),
      '[order]\ntrigger = "cooldown"\ninterval = "30m"\nexec = "true"\nskip_aliases = ["mol-dog-reaper"]\n',
    );
    writeFileSync(join(root, 'core', 'orders', 'sweep.toml'), '[order]\ntrigger = "manual"\nexec = "true"\n');
  });
  afterEach(function () {
    rmSync(root, { recursive: true, force: true });
  });
  const names = (skip: string[]) =>
    new OrderCatalog(
      root,
      () => ({ overrides: [], skip }),
      () => [{ binding: 'core', dir: join(root, 'core', 'orders'), root: join(root, 'core') }],
    )
      .list()
      .orders.map((o) => o.name);

  it('is read, and skips the order when [orders] skip names an alias, bare or under the binding', function () {
    expect(names([])).to.deep.equal(['core.reaper', 'core.sweep']);
    expect(names(['mol-dog-reaper'])).to.deep.equal(['core.sweep']);
    expect(names(['core.mol-dog-reaper'])).to.deep.equal(['core.sweep']);
    expect(names(['core.reaper'])).to.deep.equal(['core.sweep']);
  });

  it('must be a list of names', function () {
    writeFileSync(
      join(root, 'core', 'orders', 'reaper.toml'),
      '[order]\ntrigger = "manual"\nexec = "true"\nskip_aliases = "mol-dog-reaper"\n',
    );
    const listed = new OrderCatalog(
      root,
      () => ({ overrides: [], skip: [] }),
      () => [{ binding: 'core', dir: join(root, 'core', 'orders'), root: join(root, 'core') }],
    ).list();
    expect(listed.errors).to.deep.equal([
      'pack:core/orders/reaper.toml: order.skip_aliases: must be a list of order names',
    ]);
  });
});
