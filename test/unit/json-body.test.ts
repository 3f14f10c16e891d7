import { expect } from 'chai';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import pino from 'pino';
import { createApp, handlerOf } from '../../shared/http/app.js';
import { jsonBody } from '../../shared/http/json-body.js';
import { parseJsonText } from '../../shared/http/json-text.js';
import { Problem } from '../../shared/http/problem.js';

function refusal(text: string): string {
  try {
    parseJsonText(text);
  } catch (err) {
    expect(err).to.be.instanceOf(Problem);
    return (err as Problem).message;
  }
  throw new Error(`accepted: ${text}`);
}

// The JSON body reader that replaced koa-body: the same rules (object or array only, no prototype-poisoning keys,
// 1 MiB after inflating), without loading zod and formidable.
describe('JSON request bodies (shared/http/json-body.ts, json-text.ts)', function () {
  describe('parseJsonText', function () {
    it('takes objects and arrays, and an empty text as {}', function () {
      expect(parseJsonText(' \n{"a": [1, {"b": null}]}')).to.deep.equal({ a: [1, { b: null }] });
      expect(parseJsonText('[1,2]')).to.deep.equal([1, 2]);
      expect(parseJsonText('')).to.deep.equal({});
    });

    it('refuses what is not JSON, and JSON that is not an object or array', function () {
      expect(refusal('{"a": ')).to.match(/^invalid: request body is not valid JSON: /);
      for (const text of ['"s"', '42', 'null', '  true']) expect(refusal(text)).to.match(/object or an array/);
    });

    it('refuses a __proto__ key, plain or escaped, and constructor.prototype', function () {
      expect(refusal('{"a": {"__proto__": {"x": 1}}}')).to.match(/__proto__/);
      expect(refusal('{"\\u005f_proto__": {}}')).to.match(/__proto__/);
      expect(refusal('{"constructor": {"prototype": {"x": 1}}}')).to.match(/constructor/);
      // Named as a value, or a constructor key without a prototype member, is data like any other.
      expect(parseJsonText('{"note": "__proto__", "constructor": "x"}')).to.deep.equal({
        note: '__proto__',
        constructor: 'x',
      });
    });
  });

  describe('jsonBody over HTTP', function () {
    let server: Server;
    let port: number;
    before(async function () {
      const app = createApp({
        logger: pino({ level: 'silent' }),
        allowedHosts: [],
        allowedOrigins: [],
        readOnly: false,
        trustUpstreamRequestId: false,
      });
      app.use(jsonBody());
      app.use((ctx) => {
        ctx.body = { got: ctx.request.body };
      });
      server = createServer(handlerOf(app));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      port = (server.address() as AddressInfo).port;
    });
    after(() => server.close());

    const post = (body: Buffer, headers: Record<string, string> = {}) =>
      new Promise<{ status: number; json: Record<string, unknown> }>((resolve, reject) => {
        const req = request(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/',
            headers: { 'content-type': 'application/json', 'x-ctl-request': '1', ...headers },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () =>
              resolve({ status: res.statusCode!, json: JSON.parse(Buffer.concat(chunks).toString()) }),
            );
          },
        );
        req.on('error', reject);
        req.end(body);
      });

    it('parses UTF-8 with or without a byte order mark', async function () {
      const text = '{"name": "café ☕"}';
      expect((await post(Buffer.from(text))).json.got).to.deep.equal({ name: 'café ☕' });
      const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]);
      expect((await post(bom)).json.got).to.deep.equal({ name: 'café ☕' });
    });

    it('inflates gzip, deflate and br bodies, and refuses other codings with a 415', async function () {
      const text = JSON.stringify({ a: 1 });
      expect((await post(gzipSync(text), { 'content-encoding': 'gzip' })).json.got).to.deep.equal({ a: 1 });
      expect((await post(deflateSync(text), { 'content-encoding': 'deflate' })).json.got).to.deep.equal({ a: 1 });
      expect((await post(brotliCompressSync(text), { 'content-encoding': 'br' })).json.got).to.deep.equal({ a: 1 });
      const zstd = await post(Buffer.from(text), { 'content-encoding': 'zstd' });
      expect(zstd.status).to.equal(415);
      expect(zstd.json.detail).to.match(/^unsupported_media_type: /);
    });

    it('answers 413 past 1 MiB, counting the inflated text, and 400 for bad JSON', async function () {
      const big = JSON.stringify({ a: 'x'.repeat(1024 * 1024) });
      expect((await post(Buffer.from(big))).status).to.equal(413);
      const zipped = await post(gzipSync(big), { 'content-encoding': 'gzip' });
      expect(zipped.status).to.equal(413);
      expect(zipped.json.detail).to.match(/^too_large: /);
      const bad = await post(Buffer.from('{"a": '));
      expect(bad.status).to.equal(400);
      expect(bad.json.type).to.match(/invalid-request/);
    });
  });
});
