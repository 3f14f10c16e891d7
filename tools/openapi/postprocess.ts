// Turns tsoa's OpenAPI 3.0 output into the 3.1 document we publish. tsoa 6 writes 3.0 only (`nullable`,
// `example`), and it cannot describe what our middleware does for every operation (the X-CTL-Request header,
// the X-CTL-Request-Id response header, the problem responses of the shared conventions). One pure function,
// unit-tested, run by `npm run gen`.

import { PROBLEM_CODES } from '../../shared/http/problem.js';

type Json = Record<string, unknown>;

const MUTATIONS = new Set(['post', 'put', 'patch', 'delete']);
/** The browser's code exchange: served to anyone, so no 401/403 of the access rule and no security. */
const OPEN_PATH = '/v0/auth/exchange';
/**
 * The webhook listener's delivery (`[webhooks] listen`, a server of its own): served to anyone, with no CSRF
 * marker — its signature is its credential. The control plane has no such exception.
 */
export const LISTENER_PATH = '/hooks/{city}/{name}';
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

export interface PostprocessOptions {
  /** Extra paths (hand-written routes tsoa cannot describe, such as SSE streams), merged as they are. */
  extraPaths?: Record<string, Json>;
  /** Extra component schemas, merged as they are. */
  extraSchemas?: Record<string, Json>;
}

export function postprocess(input: Json, options: PostprocessOptions = {}): Json {
  const doc = structuredClone(input);
  doc.openapi = '3.1.0';
  const info = (doc.info ?? {}) as Json;
  delete info.license;
  if (info.contact && Object.keys(info.contact).length === 0) delete info.contact;
  doc.servers = [{ url: 'http://127.0.0.1:8372', description: 'Default supervisor address' }];

  const components = (doc.components ?? {}) as Json;
  doc.components = components;
  const schemas = (components.schemas ?? {}) as Json;
  components.schemas = schemas;
  Object.assign(schemas, options.extraSchemas ?? {});
  for (const [name, schema] of Object.entries(schemas)) schemas[name] = upgradeSchema(schema);

  components.headers = {
    'X-CTL-Request-Id': {
      description: 'Opaque per-response id (16 hex characters) for log correlation. Every response carries it.',
      schema: { type: 'string', pattern: '^[0-9a-f]{16}$' },
    },
    'X-CTL-Index': {
      description: "The city event log's head seq; pass it back as `index` for a blocking query.",
      schema: { type: 'integer', minimum: 0 },
    },
  };
  components.parameters = {
    ...(components.parameters ?? {}),
    'X-CTL-Request': {
      name: 'X-CTL-Request',
      in: 'header',
      required: true,
      description:
        'Anti-CSRF guard: any non-empty value. Mutations without it answer 403 `csrf: …`; one a browser sends ' +
        'from a page of another origin answers 403 `cross_origin: …` even with it.',
      schema: { type: 'string', minLength: 1 },
    },
  };
  const problemTypes = Object.keys(PROBLEM_CODES).map((code) => `urn:ctl:error:${code}`);
  const errorModel = schemas.ErrorModel as Json | undefined;
  if (errorModel) {
    const typeProp = (errorModel.properties as Json).type as Json;
    typeProp.format = 'uri';
    typeProp.default = 'about:blank';
    typeProp['x-ctl-problem-types'] = problemTypes;
  }

  for (const response of Object.values((components.responses ?? {}) as Json)) {
    const r = response as Json;
    const isError = r.content !== undefined && Object.keys(r.content as Json).some((t) => t.includes('problem'));
    upgradeResponse(r, isError);
  }

  const paths = (doc.paths ?? {}) as Json;
  // Before the hand-written paths join: only tsoa's routes validate their parameters that way.
  for (const item of Object.values(paths)) {
    for (const method of METHODS) {
      const op = (item as Json)[method] as Json | undefined;
      if (op) declareParameterValidation(op);
    }
  }
  Object.assign(paths, options.extraPaths ?? {});
  doc.paths = paths;
  for (const [path, item] of Object.entries(paths)) {
    for (const method of METHODS) {
      const op = (item as Json)[method] as Json | undefined;
      if (!op) continue;
      upgradeOperation(op, method, path);
    }
  }
  for (const key of Object.keys(components)) {
    const map = components[key] as Json;
    if (map && typeof map === 'object' && Object.keys(map).length === 0) delete components[key];
  }
  // Who may call: on loopback, the account on the other end of the connection when it is the supervisor's own or
  // one `allow_users`/`allow_groups` names (no credentials: the `{}` alternative); anyone else a bearer token, or
  // a browser session cookie made from a one-time code. Said once, for every operation, the streams included.
  components.securitySchemes = {
    bearerToken: {
      type: 'http',
      scheme: 'bearer',
      description:
        'An API token (`ctl token create`): accepted from any account and address. A read-only token is refused ' +
        'every mutation (403). Malformed, unknown, revoked or expired: 401 with `WWW-Authenticate: Bearer`.',
    },
    browserSession: {
      type: 'apiKey',
      in: 'cookie',
      name: 'ctl_session',
      description:
        'A browser session (HttpOnly, SameSite=Strict), set by `GET /v0/auth/exchange` for a one-time code from ' +
        '`POST /v0/auth/codes`; it stands for the caller that minted the code.',
    },
  };
  doc.security = [{}, { bearerToken: [] }, { browserSession: [] }];
  return sortKeysOf(doc, ['openapi', 'info', 'servers', 'security', 'tags', 'paths', 'components']);
}

function upgradeOperation(op: Json, method: string, path: string): void {
  if (typeof op.operationId !== 'string' || !op.operationId.includes('-'))
    op.operationId = operationIdFor(method, path);
  // tsoa writes an empty `security` on each operation; the document's own covers them all but the one route
  // served to anyone (its code is the credential).
  if (Array.isArray(op.security) && op.security.length === 0) delete op.security;
  const webhook = path === LISTENER_PATH;
  const open = path === OPEN_PATH || webhook;
  if (open) op.security = [];
  const params = ((op.parameters as Json[] | undefined) ?? []).filter(
    (p) => String(p.name).toLowerCase() !== 'x-ctl-request' && p.$ref !== '#/components/parameters/X-CTL-Request',
  );
  for (const p of params) if (p.schema) p.schema = upgradeSchema(p.schema);
  if (MUTATIONS.has(method) && !webhook) params.unshift({ $ref: '#/components/parameters/X-CTL-Request' });
  if (params.length) op.parameters = params;
  else delete op.parameters;

  const body = op.requestBody as Json | undefined;
  if (body) {
    upgradeContent(body.content as Json | undefined);
    // A raw-text body (a formula's TOML) is taken as any of these types; tsoa's @Consumes names only one.
    const content = body.content as Json | undefined;
    const raw = content?.['application/octet-stream'];
    if (raw) for (const type of ['text/plain', 'application/toml']) content[type] ??= structuredClone(raw);
  }

  const responses = (op.responses ?? {}) as Json;
  op.responses = responses;
  if (!open) {
    responses['401'] ??= problemResponse(
      'Unauthorized: the bearer token (or session cookie) is malformed, unknown, revoked or expired; ' +
        '`WWW-Authenticate: Bearer` says which',
    );
    responses['403'] ??= problemResponse(
      MUTATIONS.has(method)
        ? 'Forbidden: `forbidden:` an account the same-user rule refuses (no token), or a read-only token; ' +
            '`csrf:` without X-CTL-Request; `cross_origin:` from a browser page of another origin (an `Origin` ' +
            "other than the API's own, `Origin: null`, `Sec-Fetch-Site: cross-site`, or a foreign `Referer`); " +
            '`read_only:` on a read-only server'
        : 'Forbidden: `forbidden:` the connection’s account is neither the supervisor’s user nor one ' +
            '`allow_users`/`allow_groups` names, and no token was sent',
    );
  }
  const declared = responses['403'] as Json | undefined;
  if (
    MUTATIONS.has(method) &&
    !webhook &&
    declared &&
    !declared.$ref &&
    !String(declared.description).includes('cross_origin')
  ) {
    // A route's own 403: the guards every mutation meets answer it too.
    declared.description =
      `${declared.description as string}; or \`csrf:\` without X-CTL-Request, or \`cross_origin:\` from a browser ` +
      'page of another origin';
  }
  if (open && !webhook && MUTATIONS.has(method)) {
    responses['403'] ??= problemResponse(
      'Forbidden: `csrf:` without X-CTL-Request; `cross_origin:` from a browser page of another origin (an ' +
        "`Origin` other than the API's own, `Origin: null`, `Sec-Fetch-Site: cross-site`, or a foreign `Referer`)",
    );
  }
  if (!webhook) declareSharedStatuses(responses, method, path);
  if (MUTATIONS.has(method) && path.startsWith(PER_CITY)) {
    for (const [status, response] of Object.entries(responses)) {
      const r = response as Json;
      if (r.$ref || !/^2/.test(status)) continue;
      r.headers = {
        ...(r.headers ?? {}),
        'CTL-Config-Warning': {
          description:
            'A problem city.toml already had that this write went through beside, without fixing it (a broken ' +
            '`[[service]]` table); one header line per problem.',
          schema: { type: 'string' },
        },
      };
    }
  }
  for (const [status, response] of Object.entries(responses)) {
    const r = response as Json;
    if (r.$ref) continue; // a components.responses entry, upgraded on its own
    upgradeResponse(r, status === 'default' || Number(status) >= 400);
  }
}

/** The path prefix of the per-city operations, which the supervisor proxies to a city's controller. */
const PER_CITY = '/v0/city/{cityName}/';

/**
 * The statuses the shared conventions answer around any operation's own, declared on each operation (an
 * operation's own description of a status wins): what node's parser and the Host check refuse on every request;
 * what the body parser and the mutation guard refuse on every mutation (any mutation may carry a body: it is
 * read before routing); and what the per-city proxy answers for a city that is not running, restarting or not
 * answering. Every status any request can receive is then one its operation declares.
 */
export function declareSharedStatuses(responses: Json, method: string, path: string): void {
  const shared: [string, string][] = [
    ['400', 'Malformed request: HTTP the parser refuses, bad percent-encoding, a missing or repeated Host header'],
    ['408', 'Request Timeout: the request did not arrive in time'],
    ['421', 'Misdirected Request: the Host header is not a loopback name or allowed host'],
    ['431', 'Request Header Fields Too Large: request line and headers over 16 KiB'],
    ['500', 'Internal Server Error'],
  ];
  if (MUTATIONS.has(method)) {
    shared.push(
      ['400', 'Malformed request, or a body that is not valid JSON'],
      ['403', 'Forbidden: `csrf:` without X-CTL-Request, or `read_only:` on a read-only server'],
      ['413', 'Payload Too Large: a body over 1 MiB'],
      ['415', 'Unsupported Media Type: a body that is not `application/json`'],
      ['422', 'Invalid body (`errors[]` names what): its schema refuses it, or JSON nested over 64 levels'],
    );
  }
  if (path.startsWith(PER_CITY)) {
    shared.push(
      ['404', 'City not found or not running (`not_found: city not found or not running: <name>`)'],
      ['502', 'Bad Gateway: the city controller did not answer'],
      ['503', 'Service Unavailable: the city is restarting (`Retry-After`), or its controller took no request in 10 s'],
    );
  }
  for (const [status, description] of shared) responses[status] ??= problemResponse(description);
}

/** Schema keywords that can refuse a parameter's value (a plain string admits anything). */
const CONSTRAINTS = ['enum', 'const', 'pattern', 'format', 'minLength', 'maxLength', 'minimum', 'maximum'];

/**
 * A tsoa route answers 422 (`errors[]` naming the parameter) for a path, query or header value its schema
 * refuses — `fresh=maybe`, `limit=-5` — before the route runs; the route class need not say so each time. A
 * query parameter can always be refused, a plain string too: sent twice (`rig=a&rig=b`) it arrives as a list,
 * which no parameter of one value admits, and a required one can be left out.
 */
function declareParameterValidation(op: Json): void {
  const responses = (op.responses ?? {}) as Json;
  if (responses['422']) return;
  const refusable = ((op.parameters as Json[] | undefined) ?? []).some((p) => {
    const schema = p.schema as Json | undefined;
    // The CSRF header is the mutation guard's (403), not the route's.
    if (!schema || String(p.name).toLowerCase() === 'x-ctl-request') return false;
    if (p.in === 'query') return true;
    return schema.type !== 'string' || CONSTRAINTS.some((keyword) => keyword in schema);
  });
  if (refusable) {
    responses['422'] = problemResponse(
      'Invalid parameter (`errors[]` names it): a value its schema does not admit, a query parameter sent ' +
        'twice, or a required one left out',
    );
    op.responses = responses;
  }
}

function upgradeResponse(r: Json, isError: boolean): void {
  if (isError) {
    r.content = { 'application/problem+json': { schema: { $ref: '#/components/schemas/ErrorModel' } } };
  } else {
    upgradeContent(r.content as Json | undefined);
  }
  const headers = (r.headers ?? {}) as Json;
  for (const [name, header] of Object.entries(headers)) {
    const h = header as Json;
    if (h.schema) h.schema = upgradeSchema(h.schema);
    if (name.toLowerCase() === 'x-ctl-index') headers[name] = { $ref: '#/components/headers/X-CTL-Index' };
  }
  r.headers = { 'X-CTL-Request-Id': { $ref: '#/components/headers/X-CTL-Request-Id' }, ...headers };
}

function problemResponse(description: string): Json {
  return { description };
}

function upgradeContent(content: Json | undefined): void {
  if (!content) return;
  for (const media of Object.values(content)) {
    const m = media as Json;
    if (m.schema) m.schema = upgradeSchema(m.schema);
  }
}

/** `get-v0-city-by-city-name-status` from `GET /v0/city/{cityName}/status`, the reference's naming. */
export function operationIdFor(method: string, path: string): string {
  const parts = path
    .split('/')
    .filter(Boolean)
    .map((seg) => {
      const param = /^\{(.+)\}$/.exec(seg);
      const word = param ? `by-${param[1]}` : seg;
      return word
        .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
        .replace(/[^a-zA-Z0-9]+/g, '-')
        .toLowerCase();
    });
  return [method, ...parts].join('-').replace(/-+/g, '-');
}

const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);

/** 3.0 → 3.1 for one schema, recursively: `nullable`, `example`, boolean exclusive bounds. */
export function upgradeSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(upgradeSchema);
  if (typeof schema !== 'object' || schema === null) return schema;
  const s: Json = {};
  for (const [key, value] of Object.entries(schema as Json)) {
    if (key === 'enum' || key === 'const' || key === 'examples' || key === 'default' || key === 'example') {
      s[key] = value;
    } else if (SCHEMA_MAPS.has(key) && typeof value === 'object' && value !== null && !Array.isArray(value)) {
      // A map from names to schemas: its keys are names (a property may be called `nullable`), not keywords.
      s[key] = Object.fromEntries(Object.entries(value as Json).map(([name, sub]) => [name, upgradeSchema(sub)]));
    } else {
      s[key] = upgradeSchema(value);
    }
  }
  if ('example' in s) {
    s.examples = [s.example];
    delete s.example;
  }
  for (const bound of ['exclusiveMinimum', 'exclusiveMaximum'] as const) {
    if (typeof s[bound] === 'boolean') {
      const plain = bound === 'exclusiveMinimum' ? 'minimum' : 'maximum';
      if (s[bound] === true && typeof s[plain] === 'number') s[bound] = s[plain];
      else delete s[bound];
      if (typeof s[bound] === 'number') delete s[plain];
    }
  }
  const nullable = s.nullable === true;
  delete s.nullable;
  if (!nullable) return s;
  if (typeof s.type === 'string') {
    s.type = [s.type, 'null'];
    if (Array.isArray(s.enum) && !s.enum.includes(null)) s.enum = [...(s.enum as unknown[]), null];
    return s;
  }
  if (Array.isArray(s.allOf) && s.allOf.length === 1 && Object.keys(s).length === 1) {
    return { anyOf: [s.allOf[0], { type: 'null' }] };
  }
  if (Array.isArray(s.anyOf)) {
    s.anyOf = [...(s.anyOf as unknown[]), { type: 'null' }];
    return s;
  }
  return { anyOf: [s, { type: 'null' }] };
}

function sortKeysOf(doc: Json, order: string[]): Json {
  const out: Json = {};
  for (const key of order) if (key in doc) out[key] = doc[key];
  for (const key of Object.keys(doc)) if (!(key in out)) out[key] = doc[key];
  return out;
}
