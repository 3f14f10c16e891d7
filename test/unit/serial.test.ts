import { expect } from 'chai';
import { KeyedSerial, Serial } from '../../shared/serial.js';

describe('serial task queues', function () {
  it('runs tasks one after another, in order; a failure is its caller’s and never holds up the next', async function () {
    const serial = new Serial();
    const order: string[] = [];
    let release!: () => void;
    const first = serial.run(
      () =>
        new Promise<string>((resolve) => {
          order.push('first started');
          release = () => resolve('one');
        }),
    );
    const failing = serial.run(() => {
      order.push('second');
      throw new Error('boom');
    });
    const third = serial.run(() => {
      order.push('third');
      return 3;
    });
    await Promise.resolve();
    expect(order).to.deep.equal(['first started']);
    release();
    expect(await first).to.equal('one');
    const err = await failing.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(Error).with.property('message', 'boom');
    expect(await third).to.equal(3);
    expect(order).to.deep.equal(['first started', 'second', 'third']);
  });

  it('keys run side by side, each in order, and a key is forgotten once its last task settled', async function () {
    const keyed = new KeyedSerial();
    const order: string[] = [];
    let releaseA!: () => void;
    const a1 = keyed.run('a', () => new Promise<void>((resolve) => (releaseA = resolve)).then(() => order.push('a1')));
    const a2 = keyed.run('a', () => order.push('a2'));
    const b1 = keyed.run('b', () => order.push('b1'));
    await b1;
    expect(order).to.deep.equal(['b1']);
    releaseA();
    await Promise.all([a1, a2]);
    expect(order).to.deep.equal(['b1', 'a1', 'a2']);
    await new Promise((resolve) => setImmediate(resolve));
    expect(keyed.busy).to.equal(0);
    await keyed
      .run('a', () => {
        throw new Error('x');
      })
      .catch((e: unknown) => expect((e as Error).message).to.equal('x'));
    expect(await keyed.run('a', () => 'after')).to.equal('after');
  });
});
