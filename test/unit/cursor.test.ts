import { expect } from 'chai';
import { formatCursor, parseCursor, StreamPositions } from '../../shared/events/cursor.js';

describe('composite cursors', () => {
  it('a stream formats the same cursor text as formatCursor, as logs join, move and leave', () => {
    const positions = new StreamPositions();
    expect(positions.cursor()).to.equal('');
    positions.set('beta', 3);
    positions.set('alpha', 7);
    expect(positions.cursor()).to.equal('alpha:7,beta:3');
    positions.set('beta', 4);
    positions.set('Zed', 1);
    positions.set('a.b-c', 2);
    expect(positions.cursor()).to.equal(formatCursor(positions));
    expect(positions.cursor()).to.equal('Zed:1,a.b-c:2,alpha:7,beta:4');
    positions.delete('alpha');
    expect(positions.cursor()).to.equal('Zed:1,a.b-c:2,beta:4');
    expect(parseCursor(positions.cursor())).to.deep.equal(new Map([...positions]));
  });
});
