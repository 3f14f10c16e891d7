// Unit tests of the pure step that turns tsoa's OpenAPI 3.0 output into the published 3.1 document.
import { Validator } from '@seriousme/openapi-schema-validator';
import { expect } from 'chai';
import {
  operationIdFor,
  postprocess,
  upgradeSchema,
  type PostprocessOptions,
} from '../../tools/openapi/postprocess.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** postprocess, typed for poking into the result. */
function pp(input: Json, options?: PostprocessOptions): Json {
  return postprocess(input, options);
}

const CSRF_REF = { $ref: '#/components/parameters/X-CTL-Request' };
const REQUEST_ID_REF = { $ref: '#/components/headers/X-CTL-Request-Id' };
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** A small document shaped like tsoa 6's 3.0 output. */
function tsoaDocument(): Json {
  return {
    openapi: '3.0.0',
    info: { title: 'ctl control plane', version: '0.1.0', license: { name: 'UNLICENSED' }, contact: {} },
    paths: {
      '/v0/city/{cityName}/status': {
        get: {
          operationId: 'GetCityStatus',
          parameters: [{ in: 'path', name: 'cityName', required: true, schema: { type: 'string' } }],
          responses: {
            '200': {
              description: 'OK',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/StatusBody' } } },
              headers: { 'X-CTL-Index': { schema: { type: 'string' } } },
            },
            '404': {
              description: 'City not running',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorModel' } } },
            },
          },
        },
      },
      '/v0/city': {
        post: {
          operationId: 'CreateCity',
          requestBody: {
            required: true,
            content: { 'application/json': { schema: { $ref: '#/components/schemas/CityCreateRequest' } } },
          },
          responses: {
            '202': {
              description: 'Accepted',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/AsyncAcceptedResponse' } } },
            },
          },
        },
      },
      '/v0/things/{thingId}': {
        put: { operationId: 'PutThing', responses: { '204': { description: 'No Content' } } },
        patch: { operationId: 'PatchThing', responses: { '200': { description: 'OK' } } },
        delete: { operationId: 'DeleteThing', responses: { '204': { description: 'No Content' } } },
        head: { operationId: 'HeadThing', responses: { '200': { description: 'OK' } } },
        options: { operationId: 'OptionsThing', responses: { '204': { description: 'No Content' } } },
        parameters: [{ in: 'path', name: 'thingId', required: true, schema: { type: 'string' } }],
      },
      '/v0/events': {
        get: {
          operationId: 'ListEvents',
          parameters: [
            { in: 'query', name: 'limit', required: false, schema: { type: 'integer', nullable: true, example: 5 } },
          ],
          responses: { '200': { description: 'OK' } },
        },
      },
    },
    components: {
      schemas: {
        StatusBody: {
          type: 'object',
          properties: {
            name: { type: 'string', example: 'alpha' },
            note: { type: 'string', nullable: true },
            head: { type: 'integer', minimum: 0, exclusiveMinimum: true },
          },
          required: ['name'],
        },
        ErrorModel: {
          type: 'object',
          properties: { type: { type: 'string' }, detail: { type: 'string' }, code: { type: 'string' } },
        },
        CityCreateRequest: {
          type: 'object',
          properties: {
            dir: { type: 'string' },
            bootstrap_profile: {
              allOf: [{ $ref: '#/components/schemas/BootstrapProfile' }],
              nullable: true,
            },
          },
          required: ['dir'],
          additionalProperties: false,
        },
        BootstrapProfile: { type: 'string', enum: ['k8s-cell', 'single-host-compat'] },
        AsyncAcceptedResponse: {
          type: 'object',
          properties: { request_id: { type: 'string' }, event_cursor: { type: 'string' } },
          required: ['request_id', 'event_cursor'],
        },
      },
      securitySchemes: {},
    },
  };
}

function operations(doc: Json): { path: string; method: string; op: Json }[] {
  const out: { path: string; method: string; op: Json }[] = [];
  for (const [path, item] of Object.entries(doc.paths as Json)) {
    for (const method of METHODS) if (item[method]) out.push({ path, method, op: item[method] });
  }
  return out;
}

/** Every object in `value` (recursively) that has `key` as a keyword, not counting maps of property names. */
function objectsWithKeyword(value: unknown, key: string, inPropertyMap = false): unknown[] {
  if (Array.isArray(value)) return value.flatMap((v) => objectsWithKeyword(v, key));
  if (typeof value !== 'object' || value === null) return [];
  const found: unknown[] = [];
  if (!inPropertyMap && key in value) found.push(value);
  for (const [k, v] of Object.entries(value)) {
    found.push(...objectsWithKeyword(v, key, !inPropertyMap && (k === 'properties' || k === 'patternProperties')));
  }
  return found;
}

describe('OpenAPI post-processing (unit)', function () {
  describe('upgradeSchema: 3.0 schema keywords to 3.1', function () {
    it('turns nullable on a typed schema into a type array', function () {
      expect(upgradeSchema({ type: 'string', nullable: true })).to.deep.equal({ type: ['string', 'null'] });
      expect(upgradeSchema({ type: 'integer', format: 'int32', nullable: true })).to.deep.equal({
        type: ['integer', 'null'],
        format: 'int32',
      });
    });

    it('adds null to the enum of a nullable enum', function () {
      expect(upgradeSchema({ type: 'string', enum: ['a', 'b'], nullable: true })).to.deep.equal({
        type: ['string', 'null'],
        enum: ['a', 'b', null],
      });
      // Already there: not twice.
      expect(upgradeSchema({ type: 'string', enum: ['a', null], nullable: true })).to.deep.equal({
        type: ['string', 'null'],
        enum: ['a', null],
      });
    });

    it('turns a nullable single allOf (how tsoa references a nullable type) into anyOf with null', function () {
      expect(upgradeSchema({ allOf: [{ $ref: '#/components/schemas/X' }], nullable: true })).to.deep.equal({
        anyOf: [{ $ref: '#/components/schemas/X' }, { type: 'null' }],
      });
    });

    it('appends null to a nullable anyOf, and wraps any other nullable schema in anyOf with null', function () {
      expect(upgradeSchema({ anyOf: [{ type: 'string' }, { type: 'integer' }], nullable: true })).to.deep.equal({
        anyOf: [{ type: 'string' }, { type: 'integer' }, { type: 'null' }],
      });
      expect(upgradeSchema({ $ref: '#/components/schemas/X', nullable: true })).to.deep.equal({
        anyOf: [{ $ref: '#/components/schemas/X' }, { type: 'null' }],
      });
      const described = upgradeSchema({
        allOf: [{ $ref: '#/components/schemas/X' }],
        description: 'kept',
        nullable: true,
      }) as Json;
      expect(described).to.deep.equal({
        anyOf: [{ allOf: [{ $ref: '#/components/schemas/X' }], description: 'kept' }, { type: 'null' }],
      });
    });

    it('drops nullable: false without changing the schema', function () {
      expect(upgradeSchema({ type: 'string', nullable: false })).to.deep.equal({ type: 'string' });
    });

    it('turns example into a one-element examples array', function () {
      expect(upgradeSchema({ type: 'string', example: 'alpha' })).to.deep.equal({
        type: 'string',
        examples: ['alpha'],
      });
      expect(upgradeSchema({ type: 'object', example: { a: 1 } })).to.deep.equal({
        type: 'object',
        examples: [{ a: 1 }],
      });
    });

    it('turns boolean exclusive bounds into numeric ones', function () {
      expect(upgradeSchema({ type: 'integer', minimum: 0, exclusiveMinimum: true })).to.deep.equal({
        type: 'integer',
        exclusiveMinimum: 0,
      });
      expect(upgradeSchema({ type: 'number', maximum: 10, exclusiveMaximum: true })).to.deep.equal({
        type: 'number',
        exclusiveMaximum: 10,
      });
      expect(upgradeSchema({ type: 'integer', minimum: 1, exclusiveMinimum: false })).to.deep.equal({
        type: 'integer',
        minimum: 1,
      });
      expect(upgradeSchema({ type: 'number', maximum: 5, exclusiveMaximum: false })).to.deep.equal({
        type: 'number',
        maximum: 5,
      });
      // Already numeric (3.1): untouched.
      expect(upgradeSchema({ type: 'number', exclusiveMinimum: 2 })).to.deep.equal({
        type: 'number',
        exclusiveMinimum: 2,
      });
    });

    it('upgrades nested schemas: properties, items, additionalProperties, combinators', function () {
      const out = upgradeSchema({
        type: 'object',
        properties: {
          a: { type: 'string', nullable: true },
          list: { type: 'array', items: { type: 'integer', nullable: true, example: 3 } },
          map: { type: 'object', additionalProperties: { type: 'boolean', nullable: true } },
          either: {
            oneOf: [
              { type: 'string', example: 'x' },
              { type: 'number', minimum: 0, exclusiveMinimum: true },
            ],
          },
        },
      });
      expect(out).to.deep.equal({
        type: 'object',
        properties: {
          a: { type: ['string', 'null'] },
          list: { type: 'array', items: { type: ['integer', 'null'], examples: [3] } },
          map: { type: 'object', additionalProperties: { type: ['boolean', 'null'] } },
          either: {
            oneOf: [
              { type: 'string', examples: ['x'] },
              { type: 'number', exclusiveMinimum: 0 },
            ],
          },
        },
      });
    });

    it('leaves values of enum, const, default and examples alone, even when they look like schemas', function () {
      const schema = {
        type: 'object',
        default: { nullable: true, example: 1 },
        examples: [{ nullable: true }],
        const: { example: 'kept' },
        enum: [{ nullable: true }],
      };
      expect(upgradeSchema(schema)).to.deep.equal(schema);
    });

    it('keeps object properties whose names are schema keywords (a property called nullable or example)', function () {
      const out = upgradeSchema({
        type: 'object',
        properties: {
          nullable: { type: 'boolean' },
          example: { type: 'string' },
          exclusiveMinimum: { type: 'boolean' },
        },
        required: ['nullable', 'example'],
      });
      expect(out).to.deep.equal({
        type: 'object',
        properties: {
          nullable: { type: 'boolean' },
          example: { type: 'string' },
          exclusiveMinimum: { type: 'boolean' },
        },
        required: ['nullable', 'example'],
      });
    });

    it('does not modify its argument', function () {
      const schema = { type: 'string', nullable: true, example: 'x', properties: { a: { nullable: true } } };
      const copy = structuredClone(schema);
      upgradeSchema(schema);
      expect(schema).to.deep.equal(copy);
    });
  });

  describe('operationIdFor', function () {
    it('names operations after method and path, kebab-case, parameters as by-<name>', function () {
      expect(operationIdFor('get', '/v0/city/{cityName}/status')).to.equal('get-v0-city-by-city-name-status');
      expect(operationIdFor('get', '/health')).to.equal('get-health');
      expect(operationIdFor('get', '/v0/cities')).to.equal('get-v0-cities');
      expect(operationIdFor('post', '/v0/city')).to.equal('post-v0-city');
      expect(operationIdFor('post', '/v0/cities/register')).to.equal('post-v0-cities-register');
      expect(operationIdFor('post', '/v0/city/{cityName}/unregister')).to.equal('post-v0-city-by-city-name-unregister');
      expect(operationIdFor('get', '/v0/provider-readiness')).to.equal('get-v0-provider-readiness');
      expect(operationIdFor('delete', '/v0/city/{cityName}/agents/{agent}')).to.equal(
        'delete-v0-city-by-city-name-agents-by-agent',
      );
      expect(operationIdFor('get', '/v0/city/{cityName}/events/stream')).to.equal(
        'get-v0-city-by-city-name-events-stream',
      );
    });
  });

  describe('postprocess', function () {
    let input: Json;
    let doc: Json;

    before(function () {
      input = tsoaDocument();
      doc = pp(structuredClone(input));
    });

    it('is pure: the input document is not modified', function () {
      const original = tsoaDocument();
      const copy = structuredClone(original);
      pp(original);
      expect(original).to.deep.equal(copy);
    });

    it('publishes OpenAPI 3.1.0', function () {
      expect(doc.openapi).to.equal('3.1.0');
      expect(Object.keys(doc)[0]).to.equal('openapi');
    });

    it('leaves no 3.0 keywords (nullable, boolean exclusive bounds) in any schema', function () {
      expect(objectsWithKeyword(doc, 'nullable')).to.deep.equal([]);
      for (const bound of ['exclusiveMinimum', 'exclusiveMaximum']) {
        for (const holder of objectsWithKeyword(doc.components.schemas, bound)) {
          expect((holder as Json)[bound]).to.be.a('number');
        }
      }
      expect(objectsWithKeyword(doc.components.schemas, 'example')).to.deep.equal([]);
    });

    it('upgrades component schemas, parameter schemas and nested schemas', function () {
      const schemas = doc.components.schemas;
      expect(schemas.StatusBody.properties.note).to.deep.equal({ type: ['string', 'null'] });
      expect(schemas.StatusBody.properties.name).to.deep.equal({ type: 'string', examples: ['alpha'] });
      expect(schemas.StatusBody.properties.head).to.deep.equal({ type: 'integer', exclusiveMinimum: 0 });
      expect(schemas.CityCreateRequest.properties.bootstrap_profile).to.deep.equal({
        anyOf: [{ $ref: '#/components/schemas/BootstrapProfile' }, { type: 'null' }],
      });
      const limit = (doc.paths['/v0/events'].get.parameters as Json[]).find((p) => p.name === 'limit')!;
      expect(limit.schema).to.deep.equal({ type: ['integer', 'null'], examples: [5] });
    });

    it('gives operations kebab-case ids from method and path', function () {
      expect(doc.paths['/v0/city/{cityName}/status'].get.operationId).to.equal('get-v0-city-by-city-name-status');
      expect(doc.paths['/v0/city'].post.operationId).to.equal('post-v0-city');
      expect(doc.paths['/v0/things/{thingId}'].delete.operationId).to.equal('delete-v0-things-by-thing-id');
      expect(doc.paths['/v0/events'].get.operationId).to.equal('get-v0-events');
      const ids = operations(doc).map((o) => o.op.operationId as string);
      expect(new Set(ids).size).to.equal(ids.length);
    });

    it('keeps an operation id that is already kebab-case (e.g. the spec-named stream-agent-output)', function () {
      const out = pp(tsoaDocument(), {
        extraPaths: {
          '/v0/city/{cityName}/agents/{agent}/output/stream': {
            get: { operationId: 'stream-agent-output', responses: { '200': { description: 'SSE' } } },
          },
        },
      });
      expect(out.paths['/v0/city/{cityName}/agents/{agent}/output/stream'].get.operationId).to.equal(
        'stream-agent-output',
      );
    });

    it('declares the required X-CTL-Request header parameter once in components', function () {
      expect(doc.components.parameters['X-CTL-Request']).to.deep.include({
        name: 'X-CTL-Request',
        in: 'header',
        required: true,
      });
      expect(doc.components.parameters['X-CTL-Request'].schema).to.deep.include({ type: 'string', minLength: 1 });
    });

    it('adds the X-CTL-Request parameter to every POST, PUT, PATCH and DELETE, exactly once', function () {
      let mutations = 0;
      for (const { method, path, op } of operations(doc)) {
        if (!['post', 'put', 'patch', 'delete'].includes(method)) continue;
        mutations++;
        const refs = ((op.parameters as Json[]) ?? []).filter((p) => p.$ref === CSRF_REF.$ref);
        expect(refs, `${method} ${path}`).to.have.length(1);
      }
      expect(mutations).to.equal(4);
    });

    it('does not add it to GET, HEAD or OPTIONS', function () {
      for (const { method, path, op } of operations(doc)) {
        if (['post', 'put', 'patch', 'delete'].includes(method)) continue;
        const params = (op.parameters as Json[] | undefined) ?? [];
        expect(
          params.filter((p) => p.$ref === CSRF_REF.$ref || String(p.name).toLowerCase() === 'x-ctl-request'),
          `${method} ${path}`,
        ).to.deep.equal([]);
      }
      expect(doc.paths['/v0/city/{cityName}/status'].get.parameters).to.deep.equal([
        { in: 'path', name: 'cityName', required: true, schema: { type: 'string' } },
      ]);
    });

    it('replaces an inline X-CTL-Request parameter (any case) with the shared one', function () {
      const raw = tsoaDocument();
      raw.paths['/v0/city'].post.parameters = [
        { in: 'header', name: 'x-ctl-request', required: false, schema: { type: 'string' } },
        { in: 'query', name: 'dry_run', schema: { type: 'boolean' } },
      ];
      const out = pp(raw);
      expect(out.paths['/v0/city'].post.parameters).to.deep.equal([
        CSRF_REF,
        { in: 'query', name: 'dry_run', schema: { type: 'boolean' } },
      ]);
    });

    it('does not duplicate the X-CTL-Request parameter of an extra path that already references it', function () {
      const out = pp(tsoaDocument(), {
        extraPaths: {
          '/v0/city/{cityName}/sessions/{id}/submit': {
            post: {
              parameters: [CSRF_REF, { in: 'path', name: 'id', required: true, schema: { type: 'string' } }],
              responses: { '202': { description: 'Accepted' } },
            },
          },
        },
      });
      const params = out.paths['/v0/city/{cityName}/sessions/{id}/submit'].post.parameters as Json[];
      expect(params.filter((p) => p.$ref === CSRF_REF.$ref)).to.have.length(1);
    });

    it('declares the X-CTL-Request-Id header on every response of every operation', function () {
      expect(doc.components.headers['X-CTL-Request-Id'].schema).to.deep.equal({
        type: 'string',
        pattern: '^[0-9a-f]{16}$',
      });
      let responses = 0;
      for (const { method, path, op } of operations(doc)) {
        for (const [status, response] of Object.entries(op.responses as Json)) {
          responses++;
          expect((response as Json).headers?.['X-CTL-Request-Id'], `${method} ${path} ${status}`).to.deep.equal(
            REQUEST_ID_REF,
          );
        }
      }
      expect(responses).to.be.greaterThan(10);
    });

    it('keeps other response headers, pointing X-CTL-Index at the shared header', function () {
      const headers = doc.paths['/v0/city/{cityName}/status'].get.responses['200'].headers;
      expect(headers).to.deep.equal({
        'X-CTL-Request-Id': REQUEST_ID_REF,
        'X-CTL-Index': { $ref: '#/components/headers/X-CTL-Index' },
      });
      expect(doc.components.headers['X-CTL-Index'].schema).to.deep.include({ type: 'integer' });
    });

    it('declares the X-CTL-Request-Id header on responses that are references too', function () {
      const raw = tsoaDocument();
      raw.components.responses = { NotFound: { description: 'Not found' } };
      raw.paths['/v0/events'].get.responses['404'] = { $ref: '#/components/responses/NotFound' };
      const out = pp(raw);
      const ref = out.paths['/v0/events'].get.responses['404'] as Json;
      const resolved = ref.$ref ? out.components.responses[String(ref.$ref).split('/').pop()!] : ref;
      expect(resolved.headers?.['X-CTL-Request-Id']).to.deep.equal(REQUEST_ID_REF);
    });

    it('documents 401, 403, 421 and 500 on every operation, as problem+json', function () {
      for (const { method, path, op } of operations(doc)) {
        const responses = op.responses as Json;
        for (const status of ['401', '403', '421', '500']) {
          expect(responses, `${method} ${path}`).to.have.property(status);
        }
        for (const [status, response] of Object.entries(responses)) {
          if (Number(status) < 400) continue;
          expect((response as Json).content, `${method} ${path} ${status}`).to.deep.equal({
            'application/problem+json': { schema: { $ref: '#/components/schemas/ErrorModel' } },
          });
        }
      }
    });

    it('declares the shared statuses: parser and Host refusals everywhere, body refusals on mutations, the proxy on per-city operations', function () {
      for (const { method, path, op } of operations(doc)) {
        const statuses = Object.keys(op.responses as Json);
        const mutation = ['post', 'put', 'patch', 'delete'].includes(method);
        expect(statuses, `${method} ${path}`).to.include.members(['400', '408', '421', '431', '500']);
        for (const status of ['413', '415', '422'])
          expect(statuses.includes(status), `${method} ${path} ${status}`).to.equal(
            mutation || (status === '422' && statuses.includes('422')),
          );
        const perCity = path.startsWith('/v0/city/{cityName}/');
        for (const status of ['502', '503'])
          expect(statuses.includes(status), `${method} ${path} ${status}`).to.equal(perCity);
        if (perCity) expect(statuses, `${method} ${path}`).to.include('404');
      }
      // An operation's own description of a shared status wins.
      const raw = tsoaDocument();
      raw.paths['/v0/city/{cityName}/status'].get.responses['404'] = { description: 'No such city, mine' };
      expect(pp(raw).paths['/v0/city/{cityName}/status'].get.responses['404'].description).to.equal(
        'No such city, mine',
      );
    });

    it('documents 422 where a parameter can be refused (a typed or constrained value, any query one), and nowhere else', function () {
      expect(doc.paths['/v0/events'].get.responses['422'].content).to.deep.equal({
        'application/problem+json': { schema: { $ref: '#/components/schemas/ErrorModel' } },
      });
      // A plain string path parameter, and no query: nothing for tsoa to refuse.
      expect(doc.paths['/v0/city/{cityName}/status'].get.responses).to.not.have.property('422');
      // A plain string query parameter can be sent twice (a list), or left out where it is required.
      const plain = tsoaDocument();
      plain.paths['/v0/city/{cityName}/status'].get.parameters.push({
        in: 'query',
        name: 'rig',
        schema: { type: 'string' },
      });
      expect(pp(plain).paths['/v0/city/{cityName}/status'].get.responses['422'].description).to.include('sent twice');
      const raw = tsoaDocument();
      raw.paths['/v0/events'].get.responses['422'] = { description: 'Invalid limit' };
      raw.paths['/v0/city/{cityName}/status'].get.parameters.push(
        { in: 'query', name: 'fresh', schema: { type: 'boolean' } },
        { in: 'query', name: 'kind', schema: { type: 'string', enum: ['a', 'b'] } },
      );
      const out = pp(raw, {
        extraPaths: {
          '/v0/stream': {
            get: {
              parameters: [{ in: 'query', name: 'after', schema: { type: 'string', pattern: '^\\d+$' } }],
              responses: { '200': { description: 'SSE' } },
            },
          },
        },
      });
      expect(out.paths['/v0/events'].get.responses['422'].description).to.equal('Invalid limit');
      expect(out.paths['/v0/city/{cityName}/status'].get.responses).to.have.property('422');
      // A hand-written route does its own checks and says what it answers.
      expect(out.paths['/v0/stream'].get.responses).to.not.have.property('422');
    });

    it('keeps a documented 403 and its description, adding the refusals every mutation shares', function () {
      const raw = tsoaDocument();
      raw.paths['/v0/city'].post.responses['403'] = { description: 'Custom forbidden' };
      const out = pp(raw);
      const description = out.paths['/v0/city'].post.responses['403'].description as string;
      expect(description.startsWith('Custom forbidden; ')).to.equal(true);
      expect(description).to.include('csrf:').and.include('cross_origin:');
    });

    it('says once, at the root, who may call: the same-user rule, a bearer token or a session cookie', function () {
      const raw = tsoaDocument();
      raw.paths['/v0/city'].post.security = [];
      const out = pp(raw, { extraPaths: { '/v0/stream': { get: { responses: { '200': { description: 'SSE' } } } } } });
      expect(out.security).to.deep.equal([{}, { bearerToken: [] }, { browserSession: [] }]);
      for (const { method, path, op } of operations(out)) {
        expect(op, `${method} ${path}`).to.not.have.property('security');
      }
      expect(out.components.securitySchemes.bearerToken).to.include({ type: 'http', scheme: 'bearer' });
      expect(out.components.securitySchemes.browserSession).to.include({
        type: 'apiKey',
        in: 'cookie',
        name: 'ctl_session',
      });
    });

    it('serves the code exchange to anyone: no security, no 403 of the access rule', function () {
      const raw = tsoaDocument();
      raw.paths['/v0/auth/exchange'] = {
        get: { responses: { '303': { description: 'To /ui/' }, '401': { description: 'Bad code' } } },
      };
      const op = pp(raw).paths['/v0/auth/exchange'].get;
      expect(op.security).to.deep.equal([]);
      expect(op.responses).to.not.have.property('403');
      expect(op.responses['401'].description).to.equal('Bad code');
    });

    it('lists every problem type on ErrorModel.type', function () {
      const type = doc.components.schemas.ErrorModel.properties.type;
      expect(type['x-ctl-problem-types']).to.include.members([
        'urn:ctl:error:forbidden',
        'urn:ctl:error:route-not-found',
        'urn:ctl:error:city-not-found',
        'urn:ctl:error:host-not-allowed',
        'urn:ctl:error:validation-failed',
      ]);
    });

    it('merges extra paths and schemas, upgrading them like the generated ones', function () {
      const out = pp(tsoaDocument(), {
        extraPaths: {
          '/v0/events/stream': {
            get: {
              responses: {
                '200': {
                  description: 'SSE',
                  content: { 'text/event-stream': { schema: { $ref: '#/components/schemas/HeartbeatEvent' } } },
                },
              },
            },
          },
          '/v0/city/{cityName}/things': { delete: { responses: { '204': { description: 'Gone' } } } },
        },
        extraSchemas: {
          HeartbeatEvent: { type: 'object', properties: { timestamp: { type: 'string', nullable: true } } },
        },
      });
      expect(out.components.schemas.HeartbeatEvent.properties.timestamp).to.deep.equal({ type: ['string', 'null'] });
      const stream = out.paths['/v0/events/stream'].get;
      expect(stream.operationId).to.equal('get-v0-events-stream');
      expect(stream.responses['200'].headers['X-CTL-Request-Id']).to.deep.equal(REQUEST_ID_REF);
      expect(stream.parameters).to.equal(undefined);
      const del = out.paths['/v0/city/{cityName}/things'].delete;
      expect(del.parameters).to.deep.equal([CSRF_REF]);
      expect(del.responses).to.have.property('403');
    });

    it('produces a document that validates as OpenAPI 3.1', async function () {
      const result = await new Validator().validate(doc);
      expect(result.errors, JSON.stringify(result.errors, null, 1)).to.equal(undefined);
      expect(result.valid).to.equal(true);
    });
  });
});
