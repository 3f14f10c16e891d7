import { expect } from 'chai';
import { SharedFrames, sseFrame } from '../../shared/http/sse.js';

describe('SharedFrames (frames encoded once for many streams)', () => {
  const text =
    sseFrame('tagged_event', '{"type":"bead.created","subject":"é"}', 'alpha:3') + sseFrame('x', '{}', 'alpha:4');

  it('are the frames’ UTF-8 bytes, the same buffer each time', () => {
    const frames = new SharedFrames(text);
    expect(frames.bytes().toString('utf8')).to.equal(text);
    expect(frames.bytes()).to.equal(frames.bytes());
  });

  it('as one HTTP/1.1 chunk: the byte length in hex, CRLF, the bytes, CRLF', () => {
    const chunk = new SharedFrames(text).chunkedBytes().toString('utf8');
    const length = Buffer.byteLength(text);
    expect(length).to.be.greaterThan(text.length); // the é takes two bytes: the length counts bytes, not characters
    expect(chunk).to.equal(`${length.toString(16)}\r\n${text}\r\n`);
  });
});
