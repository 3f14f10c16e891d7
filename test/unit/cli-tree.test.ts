import { expect } from 'chai';
import { metaOf, TOP_LEVEL } from '../../cli/_tree.js';

// `ctl help` lists the top-level commands from the tree's own descriptions, without loading their modules: each
// must say what its module says.
describe('the CLI command tree', () => {
  for (const [name, [description, load]] of Object.entries(TOP_LEVEL)) {
    it(`lists ${name} with the description its module declares`, async () => {
      const meta = await metaOf(await load());
      expect(meta.name).to.equal(name);
      expect(description).to.equal(meta.description);
      expect(meta.hidden ?? false).to.equal(false);
    });
  }
});
