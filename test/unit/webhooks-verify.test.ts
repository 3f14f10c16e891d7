import { createHmac, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { expect } from 'chai';
import { verifyDiscord } from '../../controller/webhooks/verify-discord.js';
import { verifyGenericHmac, verifyGithub, verifySlack } from '../../controller/webhooks/verify-hmac.js';
import { JwksCache, verifyJwt } from '../../controller/webhooks/verify-jwt.js';
import { Verifiers, VerifierUnavailable } from '../../controller/webhooks/verify.js';
import type { WebhookDef, WebhookVerify } from '../../controller/webhooks/webhook-config.js';

const v = (verify: Partial<WebhookVerify> & Pick<WebhookVerify, 'scheme'>): WebhookVerify => ({
  allowedCidrs: [],
  ...verify,
});

describe('webhook verify schemes (unit)', () => {
  it('github-hmac-sha256: GitHub’s documented vector passes; another secret, a bare hex or no header fails', () => {
    // https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation
    const body = Buffer.from('Hello, World!');
    const sig = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
    const headers = { 'x-hub-signature-256': sig, 'x-github-event': 'push', 'x-github-delivery': 'g-1' };
    const req = { verify: v({ scheme: 'github-hmac-sha256' }), body, now: Date.now() };
    expect(verifyGithub({ ...req, headers, secret: "It's a Secret to Everybody" })).to.deep.equal({
      ok: true,
      eventType: 'push',
      deliveryId: 'g-1',
    });
    expect(verifyGithub({ ...req, headers, secret: 'another secret entirely' })).to.deep.equal({
      ok: false,
      reason: 'X-Hub-Signature-256 does not match',
    });
    expect(verifyGithub({ ...req, headers: { 'x-hub-signature-256': sig.slice(7) }, secret: 'x' })).to.deep.equal({
      ok: false,
      reason: 'X-Hub-Signature-256 is not in sha256=<hex> form',
    });
    expect(verifyGithub({ ...req, headers: {}, secret: 'x' }).ok).to.equal(false);
  });

  it('hmac-sha256: hex, base64 and base64url in the named header, with the named event and delivery headers', () => {
    const body = Buffer.from('{"a":1}');
    const digest = createHmac('sha256', 'plane-secret-0123').update(body).digest();
    const verify = v({
      scheme: 'hmac-sha256',
      signatureHeader: 'X-Plane-Signature',
      eventHeader: 'X-Plane-Event',
      dedupHeader: 'X-Plane-Delivery',
    });
    for (const sig of [
      digest.toString('hex'),
      `sha256=${digest.toString('hex')}`,
      digest.toString('base64'),
      digest.toString('base64url'),
    ]) {
      const out = verifyGenericHmac({
        verify,
        body,
        now: 0,
        secret: 'plane-secret-0123',
        headers: { 'x-plane-signature': sig, 'x-plane-event': 'issue', 'x-plane-delivery': 'p-9' },
      });
      expect(out, sig).to.deep.equal({ ok: true, eventType: 'issue', deliveryId: 'p-9' });
    }
    expect(
      verifyGenericHmac({
        verify,
        body,
        now: 0,
        secret: 'plane-secret-0123',
        headers: { 'x-plane-signature': 'not!sig' },
      }),
    ).to.deep.equal({ ok: false, reason: 'X-Plane-Signature is not valid hex or base64' });
  });

  it('slack-v0: Slack’s documented vector passes within the replay window, and fails outside it', () => {
    // https://api.slack.com/authentication/verifying-requests-from-slack
    const body = Buffer.from(
      'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c',
    );
    const headers = {
      'x-slack-request-timestamp': '1531420618',
      'x-slack-signature': 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503',
    };
    const req = { verify: v({ scheme: 'slack-v0' }), body, headers, secret: '8f742231b10e8888abcd99yyyzzz85a5' };
    expect(verifySlack({ ...req, now: 1531420618_000 + 60_000 })).to.deep.equal({ ok: true, eventType: undefined });
    expect(verifySlack({ ...req, now: 1531420618_000 + 6 * 60_000 })).to.deep.equal({
      ok: false,
      reason: 'X-Slack-Request-Timestamp 1531420618 is outside the replay window',
    });
    expect(verifySlack({ ...req, secret: 'wrong-wrong-wrong-wrong', now: 1531420618_000 }).ok).to.equal(false);
  });

  it('discord-ed25519: the app’s signature of timestamp + body passes; a tampered body or stale timestamp fails', () => {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const hexKey = (publicKey.export({ format: 'jwk' }).x as string).replace(/-/g, '+').replace(/_/g, '/');
    const secret = Buffer.from(hexKey, 'base64').toString('hex');
    const body = Buffer.from('{"type":2,"data":{"name":"deploy"}}');
    const ts = '1700000000';
    const signature = sign(null, Buffer.concat([Buffer.from(ts), body]), privateKey).toString('hex');
    const headers = { 'x-signature-ed25519': signature, 'x-signature-timestamp': ts };
    const req = { verify: v({ scheme: 'discord-ed25519' }), headers, secret, now: 1700000000_000 };
    expect(verifyDiscord({ ...req, body })).to.deep.equal({
      ok: true,
      eventType: 'application_command',
      deliveryId: undefined,
    });
    expect(verifyDiscord({ ...req, body: Buffer.from('{"type":2}') })).to.deep.equal({
      ok: false,
      reason: 'X-Signature-Ed25519 does not match',
    });
    expect(verifyDiscord({ ...req, body, now: 1700000000_000 + 10 * 60_000 }).ok).to.equal(false);
    expect(() => verifyDiscord({ ...req, body, secret: 'not-a-key' })).to.throw('not a 32-byte public key');
  });

  describe('jwt-jwks', () => {
    const policy = { issuer: 'https://issuer.example', audience: 'ctl-city', jwksUrl: 'https://issuer.example/jwks' };
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const ed = generateKeyPairSync('ed25519');
    const jwks = JSON.stringify({
      keys: [
        { ...rsa.publicKey.export({ format: 'jwk' }), kid: 'rsa', use: 'sig' },
        { ...ec.publicKey.export({ format: 'jwk' }), kid: 'ec' },
        { ...ed.publicKey.export({ format: 'jwk' }), kid: 'ed' },
      ],
    });
    let fetches = 0;
    const cache = () => new JwksCache(policy.jwksUrl, async () => (fetches++, jwks));
    const now = 1_800_000_000_000;
    const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const token = (alg: string, kid: string, key: KeyObject, claims: Record<string, unknown>, opts: object = {}) => {
      const head = `${b64({ alg, kid, typ: 'JWT' })}.${b64(claims)}`;
      const hash = alg === 'EdDSA' ? null : `sha${alg.slice(2)}`;
      return `${head}.${sign(hash, Buffer.from(head), { key, ...opts }).toString('base64url')}`;
    };
    const good = {
      iss: policy.issuer,
      aud: ['other', 'ctl-city'],
      exp: now / 1000 + 300,
      sub: 'ci-bot',
      jti: 'run-42',
    };
    const verify = v({ scheme: 'jwt-jwks' });
    const check = (t: string, c = cache()) =>
      verifyJwt({ verify, headers: { authorization: `Bearer ${t}` }, body: Buffer.alloc(0), now }, policy, c);

    it('takes RS256, ES256 and EdDSA tokens of the JWKS: jti is the delivery id, sub the identity', async () => {
      const c = cache();
      for (const t of [
        token('RS256', 'rsa', rsa.privateKey, good),
        token('ES256', 'ec', ec.privateKey, good, { dsaEncoding: 'ieee-p1363' }),
        token('EdDSA', 'ed', ed.privateKey, good),
      ]) {
        expect(await check(t, c)).to.deep.equal({ ok: true, identity: 'ci-bot', deliveryId: 'run-42' });
      }
      expect(fetches).to.be.greaterThan(0);
    });

    it('refuses another issuer or audience, an expired token, alg none, HS256 and a key of the wrong type', async () => {
      const reasons = async (t: string) => ((await check(t)) as { reason?: string }).reason;
      expect(await reasons(token('RS256', 'rsa', rsa.privateKey, { ...good, iss: 'https://evil' }))).to.contain(
        'issuer',
      );
      expect(await reasons(token('RS256', 'rsa', rsa.privateKey, { ...good, aud: 'other' }))).to.contain('audience');
      expect(await reasons(token('RS256', 'rsa', rsa.privateKey, { ...good, exp: now / 1000 - 120 }))).to.contain(
        'expired',
      );
      expect(await reasons(`${b64({ alg: 'none', kid: 'rsa' })}.${b64(good)}.`)).to.contain('not accepted');
      const hs = `${b64({ alg: 'HS256', kid: 'rsa' })}.${b64(good)}`;
      expect(await reasons(`${hs}.${createHmac('sha256', 'k').update(hs).digest('base64url')}`)).to.contain(
        'not accepted',
      );
      expect(await reasons(token('RS256', 'ec', rsa.privateKey, good))).to.contain('not for RS256');
      expect(await reasons(token('RS256', 'nope', rsa.privateKey, good))).to.contain('no key');
    });

    it('a JWKS that cannot be fetched is the verifier’s fault (503), not the sender’s', async () => {
      const def: WebhookDef = { name: 'ci', index: 0, scope: 'city', verify, rules: [] };
      const verifiers = new Verifiers({}, async () => {
        throw new Error('connect ECONNREFUSED');
      });
      const t = token('RS256', 'rsa', rsa.privateKey, good);
      let thrown: unknown;
      try {
        await verifiers.verify(def, policy, { authorization: `Bearer ${t}` }, Buffer.alloc(0), now);
      } catch (err) {
        thrown = err;
      }
      expect(thrown).to.be.instanceOf(VerifierUnavailable);
    });
  });

  it('refuses a secret that is unset, shorter than 16 bytes or one byte repeated, as the operator’s fault', async () => {
    const def: WebhookDef = {
      name: 'gh',
      index: 0,
      scope: 'city',
      verify: v({ scheme: 'github-hmac-sha256', secretEnv: 'S' }),
      rules: [],
    };
    for (const env of [{}, { S: 'short' }, { S: 'aaaaaaaaaaaaaaaaaaaa' }]) {
      let thrown: unknown;
      try {
        await new Verifiers(env).verify(def, undefined, {}, Buffer.alloc(0));
      } catch (err) {
        thrown = err;
      }
      expect(thrown, JSON.stringify(env)).to.be.instanceOf(VerifierUnavailable);
    }
  });
});
