import { expect } from 'chai';
import { newResponseId } from '../../shared/http/request-id.js';

// Response ids come from a pool of random bytes read once per 512 ids: across reads of the pool they stay 16 hex
// characters and never repeat.
describe('response ids (shared/http/request-id.ts)', function () {
  it('are 16 lowercase hex characters, distinct across several reads of the random pool', function () {
    const ids = Array.from({ length: 2000 }, () => newResponseId());
    for (const id of ids) expect(id).to.match(/^[0-9a-f]{16}$/);
    expect(new Set(ids).size).to.equal(ids.length);
  });
});
