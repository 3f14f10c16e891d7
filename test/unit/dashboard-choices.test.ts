import { expect } from 'chai';
import { mayDelete, type Whoami } from '../../ui/src/authorship.js';
import { KIND_LABELS, kindsOff, NOTICE_KINDS, storedKindsOff } from '../../ui/src/notices.js';

// What the dashboard decides for itself: which kinds of browser notification a person turned off (kept in the
// browser), and which comments it offers to delete. Issue 23.

describe('the dashboard’s choices', () => {
  describe('notification kinds turned off', () => {
    it('are none until a person turns one off, so every kind notifies', () => {
      expect([...kindsOff(null)]).to.deep.equal([]);
    });

    it('read back what was kept, in the usual order', () => {
      const kept = storedKindsOff(new Set(['quarantined', 'permission'] as const));
      expect(kept).to.equal('["permission","quarantined"]');
      expect([...kindsOff(kept)]).to.deep.equal(['permission', 'quarantined']);
    });

    it('keep nothing when every kind is on again', () => {
      expect(storedKindsOff(new Set())).to.equal(null);
    });

    it('ignore what they cannot read, and names the page does not know', () => {
      for (const stored of ['', 'not json', '{"permission":true}', '"permission"', 'null', '42']) {
        expect([...kindsOff(stored)], stored).to.deep.equal([]);
      }
      expect([...kindsOff('["run_failed","paged",7,"question"]')]).to.deep.equal(['question', 'run_failed']);
    });

    it('each have a label for their checkbox', () => {
      expect(Object.keys(KIND_LABELS)).to.have.members([...NOTICE_KINDS]);
      expect(new Set(Object.values(KIND_LABELS)).size).to.equal(NOTICE_KINDS.length);
    });
  });

  describe('deleting a comment', () => {
    const user: Whoami = { actor: 'ann', kind: 'user', name: 'ann', read_only: false, browser_session: false };
    const token: Whoami = { actor: 'token:ci', kind: 'token', name: 'ci', read_only: false, browser_session: true };

    it('is offered only on what the caller wrote', () => {
      expect(mayDelete(user, 'ann')).to.equal(true);
      expect(mayDelete(user, 'bob')).to.equal(false);
      expect(mayDelete(user, 'token:ann')).to.equal(false);
      expect(mayDelete(token, 'token:ci')).to.equal(true);
      expect(mayDelete(token, 'ci')).to.equal(false);
      // An agent's comment is its agent's, never the person's, even when names look alike.
      expect(mayDelete(user, 'worker')).to.equal(false);
    });

    it('is not offered before the page knows who it is, nor with a read-only token', () => {
      expect(mayDelete(undefined, 'ann')).to.equal(false);
      expect(mayDelete({ ...token, read_only: true }, 'token:ci')).to.equal(false);
    });
  });
});
