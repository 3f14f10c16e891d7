import { createHmac } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { qualifiedPool } from '../../controller/orders/order-context.js';
import { parseOrder } from '../../controller/orders/order-file.js';
import { payloadVars, signatureMismatch } from '../../controller/webhooks/order-hooks.js';
import { readSupervisorConfig } from '../../shared/config/supervisor-config.js';
import { tempDir } from '../helpers/temp-dir.js';
import { controllerHookPath, LISTENER_HOOK_PATH, listenerHookPath } from '../../shared/http/webhook-path.js';

describe('order webhooks (unit)', () => {
  const body = Buffer.from('{"ref":"main"}');
  const digest = createHmac('sha256', 's3cret').update(body).digest();

  it('accepts the body’s HMAC as sha256=hex, bare hex or base64, and nothing else', () => {
    for (const sig of [`sha256=${digest.toString('hex')}`, digest.toString('hex'), digest.toString('base64')]) {
      expect(signatureMismatch('s3cret', sig, body, 'X-Sig')).to.equal(undefined);
    }
    expect(signatureMismatch('other', `sha256=${digest.toString('hex')}`, body, 'X-Sig')).to.equal(
      'X-Sig does not match the body',
    );
    expect(signatureMismatch('s3cret', undefined, body, 'X-Sig')).to.equal('missing X-Sig signature header');
    expect(signatureMismatch('s3cret', 'sha256=abc', body, 'X-Sig')).to.equal('X-Sig does not match the body');
  });

  it('takes a JSON object’s top-level scalars as vars; refuses JSON that does not parse', () => {
    const json = { 'content-type': 'application/json' };
    expect(payloadVars(json, Buffer.from('{"a":"x","n":2,"b":true,"o":{},"bad-key":"y"}'))).to.deep.equal({
      a: 'x',
      n: '2',
      b: 'true',
    });
    expect(payloadVars({ 'content-type': 'text/plain' }, Buffer.from('{oops'))).to.deep.equal({});
    expect(() => payloadVars(json, Buffer.from('{oops'))).to.throw(/not JSON/);
  });

  it('knows a listener delivery by its path; forwards it to the controller’s route', () => {
    expect(LISTENER_HOOK_PATH.exec('/hooks/a/deploy')?.slice(1)).to.deep.equal(['a', 'deploy']);
    expect(LISTENER_HOOK_PATH.exec('/hooks/a/x:rig:web')?.slice(1)).to.deep.equal(['a', 'x:rig:web']);
    expect(LISTENER_HOOK_PATH.test('/hooks/a/deploy/more')).to.equal(false);
    expect(LISTENER_HOOK_PATH.test('/v0/city/a/hook/deploy')).to.equal(false);
    expect(controllerHookPath('a b', 'x:rig:web')).to.equal('/v0/city/a%20b/hook/x%3Arig%3Aweb');
    expect(listenerHookPath('a', 'deploy')).to.equal('/hooks/a/deploy');
  });

  it('reads [webhooks] listen of supervisor.toml: off until set, host:port, refused naming the key', () => {
    const dir = tempDir('ctl-listen-');
    const file = join(dir, 'supervisor.toml');
    const listen = (toml: string) => {
      writeFileSync(file, toml);
      return readSupervisorConfig(file, {}).webhooksListen;
    };
    try {
      expect(listen('[supervisor]\nport = 1\n')).to.equal(undefined);
      expect(listen('[webhooks]\nlisten = "127.0.0.1:8373"\n')).to.deep.equal({ host: '127.0.0.1', port: 8373 });
      expect(listen('[webhooks]\nlisten = "[::1]:0"\n')).to.deep.equal({ host: '::1', port: 0 });
      for (const bad of ['"127.0.0.1"', '":8373"', '"host:99999"', '8373']) {
        expect(() => listen(`[webhooks]\nlisten = ${bad}\n`)).to.throw(
          /supervisor\.toml: webhooks\.listen must be "host:port", such as "127\.0\.0\.1:8373"; not /,
        );
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('parses secret_env, signature_header and scope; refuses them where they mean nothing', () => {
    const hook = parseOrder(
      '[order]\ntrigger = "webhook"\nexec = "true"\nsecret_env = "GH_SECRET"\nsignature_header = "X-Sig"\nscope = "city"\n',
      'orders/h.toml',
      'h',
    );
    expect(hook).to.include({ secretEnv: 'GH_SECRET', signatureHeader: 'X-Sig', scope: 'city', scopedName: 'h' });
    expect(() => parseOrder('[order]\ntrigger = "manual"\nexec = "true"\nsecret_env = "X"\n', 'o.toml', 'o')).to.throw(
      /secret_env: is for webhook orders/,
    );
    expect(() =>
      parseOrder('[order]\ntrigger = "webhook"\nexec = "true"\nsecret_env = "not a name"\n', 'o.toml', 'o'),
    ).to.throw(/secret_env: must be an environment variable name/);
    expect(() => parseOrder('[order]\ntrigger = "manual"\nexec = "true"\nscope = "town"\n', 'o.toml', 'o')).to.throw(
      /scope: must be rig or city/,
    );
  });

  it('qualifies a rig instance’s bare pool with its rig when the city has that agent', () => {
    const order = { ...parseOrder('[order]\ntrigger = "manual"\nformula = "f"\npool = "worker"\n', 'o', 'o') };
    const rigOrder = { ...order, rig: 'web', rigDir: '/w', binding: 'tools', scopedName: 'o:rig:web' };
    expect(qualifiedPool(order, () => true)).to.equal('worker');
    expect(qualifiedPool(rigOrder, (n) => n === 'web/tools.worker')).to.equal('web/tools.worker');
    expect(qualifiedPool(rigOrder, (n) => n === 'web/worker')).to.equal('web/worker');
    expect(qualifiedPool(rigOrder, (n) => n === 'worker')).to.equal('worker');
    expect(qualifiedPool({ ...rigOrder, pool: 'api/worker' }, () => false)).to.equal('api/worker');
  });
});
