import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { createServer as createHttpServer, type Server, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { expect } from 'chai';
import { ChaosProxy } from './helpers/chaos-proxy.js';
import { SseStreamReader } from './helpers/sse.js';
import {
  expectFailure as expectCliFailure,
  expectSuccess,
  runCtl,
  runCtlOnTerminal,
  type CliResult,
} from './helpers/cli.js';
import { ctlEntryPath } from '../shared/paths.js';
import { CtlProcess } from './helpers/ctl-process.js';
import { killAllMentioning } from './helpers/processes.js';
import { CSRF, freePort, TestSupervisor } from './helpers/supervisor.js';
import { WAIT_MS, waitUntil } from './helpers/wait.js';

// `ctl events`, run as the real built binary against a real supervisor and real cities (control-plane.md,
// "Command-line client `ctl events`"; decisions.md, "The `ctl` client" and "Cursors and streams"; the reference
// digest, events-and-cli.md section 5, with `ctl events:` for `gc events:`). Events are put on the bus with
// `POST /v0/city/{name}/events`. Every line the command prints is checked against docs/schema/events.json.

interface Envelope {
  seq: number;
  type: string;
  ts: string;
  actor: string;
  subject?: string;
  message?: string;
  payload: Record<string, unknown>;
  city?: string;
}

type LineKind = 'cityList' | 'supervisorList' | 'cityStream' | 'supervisorStream';

const ENVELOPE_KEYS = ['seq', 'type', 'ts', 'actor', 'subject', 'message', 'payload'];
const SCHEMA_ID = 'https://ctl.invalid/schema/events.json';
const OPENAPI_ID = 'https://ctl.invalid/schema/openapi.json';
const schemaFile = new URL('../docs/schema/events.json', import.meta.url);

/** The failure contract of `ctl events`. */
function expectFailure(result: CliResult, pattern?: RegExp | string): string {
  return expectCliFailure(result, 'events', pattern);
}

function parseCursor(text: string): Map<string, number> {
  return new Map(
    text.split(',').map((entry) => {
      const colon = entry.lastIndexOf(':');
      return [entry.slice(0, colon), Number(entry.slice(colon + 1))] as const;
    }),
  );
}

/** The log a supervisor-scope event belongs to: request results live in the supervisor's own log. */
function logOf(event: Envelope): string {
  return event.type.startsWith('request.') ? '__supervisor__' : event.city!;
}

describe('ctl events (real binary, real supervisor)', function () {
  this.timeout(60_000);

  let sup: TestSupervisor;
  let deadApi: string;
  let validators: Record<LineKind | 'any', ValidateFunction>;
  const background = new Set<CtlProcess>();
  const cleanups: (() => Promise<void>)[] = [];

  /** Runs ctl against the shared supervisor from outside any city; CTL_CITY is never inherited unless given. */
  function ctl(args: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): Promise<CliResult> {
    return sup.ctl(['events', ...args], { cwd: options.cwd, env: { CTL_CITY: undefined, ...options.env } });
  }

  /** Starts `ctl events …` in the background; stopped after each test at the latest. */
  function start(args: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): CtlProcess {
    const env: NodeJS.ProcessEnv = { ...sup.env, ...options.env };
    if (!options.env || !('CTL_CITY' in options.env)) delete env.CTL_CITY;
    const child = new CtlProcess(['events', ...args], { env, cwd: options.cwd ?? sup.root });
    background.add(child);
    return child;
  }

  /** Records an event in a city's log through the API; returns its seq. */
  async function record(
    city: string,
    event: { type: string; actor?: string; subject?: string; message?: string; payload?: Record<string, unknown> },
  ): Promise<number> {
    return recordRaw(city, JSON.stringify({ actor: 'test', ...event }));
  }

  async function recordRaw(city: string, body: string): Promise<number> {
    const res = await fetch(`${sup.base}/v0/city/${city}/events`, {
      method: 'POST',
      headers: { ...CSRF, 'Content-Type': 'application/json' },
      body,
    });
    const text = await res.text();
    if (res.status !== 201) throw new Error(`POST /v0/city/${city}/events: ${res.status} ${text}`);
    return (JSON.parse(text) as { seq: number }).seq;
  }

  async function cityHead(city: string): Promise<number> {
    const res = await fetch(`${sup.base}/v0/city/${city}/events?limit=1`);
    expect(res.status).to.equal(200);
    return Number(res.headers.get('X-CTL-Index'));
  }

  /** Parses and checks one printed line: JSON object, envelope members only, valid against events.json. */
  function checkLine(line: string, kind: LineKind): Envelope {
    const event = JSON.parse(line) as Envelope;
    expect(event, line).to.be.an('object');
    const tagged = kind === 'supervisorList' || kind === 'supervisorStream';
    const allowed = tagged ? [...ENVELOPE_KEYS, 'city'] : ENVELOPE_KEYS;
    for (const key of Object.keys(event)) expect(allowed, `member ${key} of ${line}`).to.include(key);
    if (tagged) expect(event.city, `city of ${line}`).to.be.a('string');
    else expect(event, line).to.not.have.property('city');
    expect(event, line).to.not.have.property('ok');
    for (const name of ['any', kind] as const) {
      const valid = validators[name](event);
      expect(valid, `${line} against ${name}: ${JSON.stringify(validators[name].errors?.slice(0, 3))}`).to.equal(true);
    }
    return event;
  }

  function checkLines(out: string[], kind: LineKind): Envelope[] {
    return out.map((line) => checkLine(line, kind));
  }

  before(async function () {
    this.timeout(90_000);
    // Short heartbeats, so that every stream test also sees heartbeat frames (which must never be printed).
    sup = await TestSupervisor.start({ env: { CTL_SSE_HEARTBEAT_MS: '250' } });
    deadApi = `http://127.0.0.1:${await freePort()}`;
    await Promise.all(['alpha', 'beta', 'pm', 'gamma', 'rot'].map((name) => sup.createCity(name)));

    // The events line schema, with the OpenAPI document it refers to, as the supervisor serves it.
    const doc = (await (await fetch(`${sup.base}/openapi.json`)).json()) as Record<string, unknown>;
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    ajv.addVocabulary([
      'openapi',
      'info',
      'paths',
      'components',
      'servers',
      'tags',
      'security',
      'webhooks',
      'jsonSchemaDialect',
      'externalDocs',
      'discriminator',
      'xml',
      'example',
      'x-ctl-problem-types',
      'x-ctl-events',
    ]);
    for (const format of ['int32', 'int64', 'float', 'double']) ajv.addFormat(format, true);
    addFormats.default(ajv);
    ajv.addSchema({ ...doc, $id: OPENAPI_ID });
    ajv.addSchema(JSON.parse(readFileSync(schemaFile, 'utf8')) as Record<string, unknown>);
    const get = (ref: string) => {
      const validate = ajv.getSchema(ref);
      if (!validate) throw new Error(`no schema ${ref}`);
      return validate;
    };
    validators = {
      any: get(SCHEMA_ID),
      cityList: get(`${SCHEMA_ID}#/$defs/cityListLine`),
      supervisorList: get(`${SCHEMA_ID}#/$defs/supervisorListLine`),
      cityStream: get(`${SCHEMA_ID}#/$defs/cityStreamLine`),
      supervisorStream: get(`${SCHEMA_ID}#/$defs/supervisorStreamLine`),
    };

    // More than one page (1000) of events in alpha, recorded by 8 concurrent clients.
    const queue = Array.from({ length: 1500 }, (_, i) => i);
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let i = queue.shift(); i !== undefined; i = queue.shift()) {
          await record('alpha', { type: 'bulk', payload: { i } });
        }
      }),
    );
    await record('alpha', { type: 'since.test', subject: 'old' });
  });

  afterEach(async function () {
    await Promise.all([...background].map((child) => child.stop()));
    background.clear();
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  after(async function () {
    this.timeout(60_000);
    await Promise.all([...background].map((child) => child.stop()));
    for (const cleanup of cleanups.splice(0)) await cleanup();
    if (sup) {
      const root = sup.root;
      await sup.cleanup();
      killAllMentioning(root);
    }
  });

  describe('the events line schema', function () {
    it('is served at GET /schema/events.json, equal to docs/schema/events.json but for its $id', async function () {
      const res = await fetch(`${sup.base}/schema/events.json`);
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/json/);
      const served = (await res.json()) as Record<string, unknown>;
      const file = JSON.parse(readFileSync(schemaFile, 'utf8')) as Record<string, unknown>;
      expect(file.$id).to.equal(SCHEMA_ID);
      expect({ ...served, $id: undefined }).to.deep.equal({ ...file, $id: undefined });
    });

    it('rejects a line with an extra member (so the checks below mean something)', function () {
      const line = { seq: 1, type: 'x', ts: new Date().toISOString(), actor: 'a', payload: {}, ok: true };
      expect(validators.cityStream(line)).to.equal(false);
      expect(validators.any(line)).to.equal(false);
      const clean: Record<string, unknown> = { ...line };
      delete clean.ok;
      expect(validators.cityStream(clean)).to.equal(true);
    });
  });

  describe('list mode', function () {
    it('supervisor scope: one tagged JSON object per line, every event of every page of GET /v0/events, in its order', async function () {
      const out = expectSuccess(await ctl([]));
      expect(out.length).to.be.greaterThan(1500);
      expect(out[0].startsWith('{'), 'no outer array').to.equal(true);
      const events = checkLines(out, 'supervisorList');
      // The list's order: by time, then city, then seq.
      const key = (e: { ts: string; city: string; seq: number }) => [Date.parse(e.ts), e.city, e.seq] as const;
      const every = (await sup.events()).sort((a, b) => {
        const [x, y] = [key(a), key(b)];
        return x[0] - y[0] || (x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0) || x[2] - y[2];
      });
      expect(every.length).to.be.greaterThan(1000);
      expect(events).to.deep.equal(every);
      const cities = new Set(events.map((e) => e.city));
      for (const name of ['__supervisor__', 'alpha', 'beta', 'pm']) expect(cities).to.include(name);
    });

    it('city scope (--city NAME): every event of the log, oldest first, across pages of 1000', async function () {
      const head = await cityHead('alpha');
      expect(head).to.be.greaterThan(1500);
      const out = expectSuccess(await ctl(['--city', 'alpha']));
      const events = checkLines(out, 'cityList');
      expect(events.map((e) => e.seq)).to.deep.equal(Array.from({ length: head }, (_, i) => i + 1));
      expect(events[0].type).to.equal('city.created');
      const bulk = events.filter((e) => e.type === 'bulk').map((e) => e.payload.i as number);
      expect(bulk.sort((a, b) => a - b)).to.deep.equal(Array.from({ length: 1500 }, (_, i) => i));
    });

    it('--type filters (also across pages: 1500 matches)', async function () {
      const out = expectSuccess(await ctl(['--city', 'alpha', '--type', 'bulk']));
      const events = checkLines(out, 'cityList');
      expect(events).to.have.length(1500);
      expect(events.every((e) => e.type === 'bulk')).to.equal(true);
      const seqs = events.map((e) => e.seq);
      expect(seqs).to.deep.equal([...seqs].sort((a, b) => a - b));
      expect(new Set(seqs).size).to.equal(1500);

      const tagged = checkLines(expectSuccess(await ctl(['--type', 'city.created'])), 'supervisorList');
      expect(tagged.map((e) => e.city).sort()).to.deep.equal(['alpha', 'beta', 'gamma', 'pm', 'rot']);
      expect(tagged.every((e) => e.type === 'city.created')).to.equal(true);
    });

    describe('the city in scope', function () {
      const mark = { type: 'scope.mark' };
      let expected: Envelope[];

      before(async function () {
        await record('alpha', { ...mark, subject: 'alpha-mark' });
        await record('beta', { ...mark, subject: 'beta-mark' });
        const out = expectSuccess(await ctl(['--city', 'alpha', '--type', mark.type]));
        expected = checkLines(out, 'cityList');
        expect(expected.map((e) => e.subject)).to.deep.equal(['alpha-mark']);
      });

      const cases: [string, () => { args: string[]; env?: NodeJS.ProcessEnv; cwd?: string }][] = [
        ['--city PATH (absolute)', () => ({ args: ['--city', sup.cityDir('alpha')] })],
        ['--city PATH (relative to the working directory)', () => ({ args: ['--city', './cities/alpha'] })],
        ['CTL_CITY=NAME', () => ({ args: [], env: { CTL_CITY: 'alpha' } })],
        ['CTL_CITY=PATH', () => ({ args: [], env: { CTL_CITY: sup.cityDir('alpha') } })],
        ['the working directory is the city directory', () => ({ args: [], cwd: sup.cityDir('alpha') })],
        [
          'the working directory is deep inside the city directory',
          () => {
            const cwd = join(sup.cityDir('alpha'), 'work', 'deeper');
            mkdirSync(cwd, { recursive: true });
            return { args: [], cwd };
          },
        ],
      ];
      for (const [name, setup] of cases) {
        it(`${name}: city envelopes without \`city\``, async function () {
          const { args, env, cwd } = setup();
          const out = expectSuccess(await ctl([...args, '--type', mark.type], { env, cwd }));
          expect(checkLines(out, 'cityList')).to.deep.equal(expected);
        });
      }

      it('--city wins over CTL_CITY and the working directory', async function () {
        const out = expectSuccess(
          await ctl(['--city', 'beta', '--type', mark.type], { env: { CTL_CITY: 'alpha' }, cwd: sup.cityDir('alpha') }),
        );
        expect(checkLines(out, 'cityList').map((e) => e.subject)).to.deep.equal(['beta-mark']);
      });
    });

    it('--since keeps only events since then: an RFC 3339 time, or a duration back from now', async function () {
      const newSeq = await record('alpha', { type: 'since.test', subject: 'new' });
      const both = checkLines(
        expectSuccess(await ctl(['--city', 'alpha', '--since', '1h', '--type', 'since.test'])),
        'cityList',
      );
      expect(both.map((e) => e.subject)).to.deep.equal(['old', 'new']);
      // A moment between the two events: only the new one is since then.
      const [oldMs, newMs] = both.map((e) => Date.parse(e.ts));
      expect(newMs, 'the old event is older').to.be.greaterThan(oldMs + 1);
      const between = new Date(Math.ceil((oldMs + newMs) / 2)).toISOString();
      const recent = checkLines(
        expectSuccess(await ctl(['--city', 'alpha', '--since', between, '--type', 'since.test'])),
        'cityList',
      );
      expect(recent.map((e) => [e.seq, e.subject])).to.deep.equal([[newSeq, 'new']]);
      const tagged = checkLines(
        expectSuccess(await ctl(['--since', between, '--type', 'since.test'])),
        'supervisorList',
      );
      expect(tagged.map((e) => [e.city, e.subject])).to.deep.equal([['alpha', 'new']]);
      // As a duration (milliseconds back from now, which reach the new event and not the old one).
      const ms = Date.now() - Math.ceil((oldMs + newMs) / 2);
      const byDuration = checkLines(
        expectSuccess(await ctl(['--city', 'alpha', '--since', `${ms}ms`, '--type', 'since.test'])),
        'cityList',
      );
      expect(byDuration.map((e) => e.subject)).to.include('new');
      // Days, and a bare number of seconds.
      for (const since of ['1d', '3600']) {
        const all = checkLines(
          expectSuccess(await ctl(['--city', 'alpha', '--since', since, '--type', 'since.test'])),
          'cityList',
        );
        expect(
          all.map((e) => e.subject),
          since,
        ).to.deep.equal(['old', 'new']);
      }
      const everything = expectSuccess(await ctl(['--city', 'alpha', '--since', '1h']));
      expect(everything).to.have.length(await cityHead('alpha'));
    });

    it('prints nothing and exits 0 when nothing matches', async function () {
      for (const args of [
        ['--type', 'no.such.type'],
        ['--city', 'alpha', '--type', 'no.such.type'],
        ['--city', 'alpha', '--payload-match', 'no_such_key=1'],
        ['--since', '1ms', '--type', 'bulk'],
      ]) {
        const result = await ctl(args);
        expect(result, args.join(' ')).to.deep.equal({ code: 0, stdout: '', stderr: '' });
      }
    });
  });

  describe('--payload-match', function () {
    const seqs: Record<string, number> = {};

    before(async function () {
      const type = 'pm.test';
      seqs.P1 = await record('pm', {
        type,
        subject: 'P1',
        payload: {
          kind: 'a',
          n: 3,
          bead: { issue_type: 'bug', metadata: { 'ctl.root': 'r1' } },
          flag: true,
          nil: null,
          obj: { b: 1, a: [1, 2] },
          arr: [{ y: 1, x: 2 }, 3],
          'a.b': 'lit',
          eq: 'x=y',
          empty: '',
        },
      });
      // 3.0 as written in JSON: a number in integer form.
      seqs.P2 = await recordRaw(
        'pm',
        `{"type":"${type}","actor":"test","subject":"P2","payload":{"kind":"b","n":3.0,"bead":{"issue_type":"task"},"flag":false,"count":"3"}}`,
      );
      seqs.P3 = await record('pm', {
        type,
        subject: 'P3',
        payload: {
          kind: 'c',
          n: 3.5,
          bead: { issue_type: 'bug', metadata: { ctl: { root: 'r3' } } },
          nil: 'null',
          issue_type: 'bug-top',
        },
      });
      seqs.P4 = await record('pm', { type, subject: 'P4' }); // no payload
      seqs.P5 = await record('pm', { type, subject: 'P5', payload: { bead: 'bug', kind: 'e' } });
      await record('pm', { type: 'pm.other', subject: 'P6', payload: { kind: 'a' } });
    });

    async function matching(...matchers: string[]): Promise<string[]> {
      const args = ['--city', 'pm', '--type', 'pm.test'];
      for (const m of matchers) args.push('--payload-match', m);
      const events = checkLines(expectSuccess(await ctl(args)), 'cityList');
      return events.map((e) => e.subject!);
    }

    it('without a matcher, every event of the type (including the one without a payload)', async function () {
      expect(await matching()).to.deep.equal(['P1', 'P2', 'P3', 'P4', 'P5']);
    });

    const cases: [string, string[], string[]][] = [
      ['a top-level key', ['kind=a'], ['P1']],
      ['a dotted path into nested objects', ['bead.issue_type=bug'], ['P1', 'P3']],
      ['a dotted path walks only objects (a string in the middle never matches)', ['bead.issue_type=task'], ['P2']],
      ['a key without dots never walks into nested objects', ['issue_type=bug'], []],
      ['a key without dots matches the top level only', ['issue_type=bug-top'], ['P3']],
      ['a literal dotted key at the top level', ['a.b=lit'], ['P1']],
      ['a literal dotted key inside a nested object', ['bead.metadata.ctl.root=r1'], ['P1']],
      ['a dotted path through several objects', ['bead.metadata.ctl.root=r3'], ['P3']],
      ['a missing segment', ['kind.x=a'], []],
      ['the same key repeated: OR', ['kind=a', 'kind=b'], ['P1', 'P2']],
      ['the same key repeated, one value matching nothing', ['kind=zzz', 'kind=c'], ['P3']],
      ['different keys: AND', ['kind=a', 'bead.issue_type=bug'], ['P1']],
      ['different keys: AND (no event has both)', ['kind=b', 'bead.issue_type=bug'], []],
      ['OR within a key, AND across keys', ['kind=a', 'kind=c', 'bead.issue_type=bug', 'n=3.5'], ['P3']],
      ['numbers compare as text: 3 matches 3 and 3.0 (and the string "3")', ['n=3'], ['P1', 'P2']],
      ['numbers compare as text: 3.0 matches neither 3 nor 3.0', ['n=3.0'], []],
      ['numbers compare as text: a string "3" matches 3', ['count=3'], ['P2']],
      ['numbers compare as text: 3.5', ['n=3.5'], ['P3']],
      ['booleans: true', ['flag=true'], ['P1']],
      ['booleans: false', ['flag=false'], ['P2']],
      ['null compares as the text null (so does the string "null")', ['nil=null'], ['P1', 'P3']],
      ['an object compares as compact JSON with sorted keys', ['obj={"a":[1,2],"b":1}'], ['P1']],
      ['an object in its original key order does not match', ['obj={"b":1,"a":[1,2]}'], []],
      ['an object with spaces does not match', ['obj={"a": [1, 2], "b": 1}'], []],
      ['an array compares as compact JSON, objects inside with sorted keys', ['arr=[{"x":2,"y":1},3]'], ['P1']],
      ['the value is everything after the first =', ['eq=x=y'], ['P1']],
      ['an empty value matches an empty string only', ['empty='], ['P1']],
    ];
    for (const [name, matchers, expected] of cases) {
      it(`${name}: ${matchers.join(' ')}`, async function () {
        expect(await matching(...matchers)).to.deep.equal(expected);
      });
    }

    it('an event without a payload object never matches when a matcher is given', async function () {
      for (const matchers of [['kind='], ['nil=null'], ['missing='], ['payload={}']]) {
        expect(await matching(...matchers), matchers.join(' ')).to.not.include('P4');
      }
    });

    it('accepts --payload-match=KEY=VALUE', async function () {
      const out = expectSuccess(
        await ctl(['--city', 'pm', '--type', 'pm.test', '--payload-match=kind=b', '--payload-match=kind=c']),
      );
      expect(checkLines(out, 'cityList').map((e) => e.subject)).to.deep.equal(['P2', 'P3']);
    });

    it('works in supervisor scope and without --type', async function () {
      const out = expectSuccess(await ctl(['--payload-match', 'kind=a']));
      const events = checkLines(out, 'supervisorList');
      expect(events.map((e) => [e.city, e.subject])).to.deep.equal([
        ['pm', 'P1'],
        ['pm', 'P6'],
      ]);
    });

    it('applies to --watch too (replaying with --after)', async function () {
      const out = expectSuccess(
        await ctl([
          '--city',
          'pm',
          '--watch',
          '--after',
          '0',
          '--timeout',
          '10s',
          '--payload-match',
          'bead.issue_type=task',
        ]),
      );
      expect(checkLines(out, 'cityStream').map((e) => e.subject)).to.deep.equal(['P2']);
    });
  });

  describe('--seq', function () {
    it('city scope: the X-CTL-Index head as plain text', async function () {
      const head = await cityHead('alpha');
      expect(expectSuccess(await ctl(['--seq', '--city', 'alpha']))).to.deep.equal([String(head)]);
      expect(expectSuccess(await ctl(['--seq'], { cwd: sup.cityDir('pm') }))).to.deep.equal([
        String(await cityHead('pm')),
      ]);
    });

    it('supervisor scope: the composite event_cursor of GET /v0/events', async function () {
      const out = expectSuccess(await ctl(['--seq']));
      expect(out).to.have.length(1);
      expect(out[0]).to.match(/^__supervisor__:\d+(,[a-z][a-z0-9_-]*:\d+)+$/);
      const { data } = await sup.api.GET('/v0/events', { params: { query: { limit: 1 } } });
      expect(out[0]).to.equal(data!.event_cursor);
      const cursor = parseCursor(out[0]);
      expect(cursor.get('alpha')).to.equal(await cityHead('alpha'));
      expect([...cursor.keys()]).to.deep.equal([...cursor.keys()].sort());
    });

    it('does not go with --follow or --watch, which do not go together either', async function () {
      for (const [a, b] of [
        ['--seq', '--follow'],
        ['--seq', '--watch'],
        ['--follow', '--watch'],
      ]) {
        expect(expectFailure(await ctl([a, b, '--city', 'beta']))).to.equal(`${a} and ${b} are mutually exclusive`);
        expect(expectFailure(await ctl([b, a, '--api', deadApi]))).to.equal(`${a} and ${b} are mutually exclusive`);
      }
    });

    it('city round trip: --seq, then --follow --after prints exactly the later events', async function () {
      const [head] = expectSuccess(await ctl(['--seq', '--city', 'beta']));
      const later = [];
      for (let i = 0; i < 3; i++) later.push(await record('beta', { type: 'rt.city', subject: `r${i}` }));
      const follow = start(['--follow', '--city', 'beta', '--after', head]);
      await follow.waitFor('the 3 recorded events', (l) => l.length >= 3);
      later.push(await record('beta', { type: 'rt.city', subject: 'live' }));
      // Anything printed twice would come before an event recorded after them all.
      await record('beta', { type: 'rt.end' });
      await follow.waitFor('the last event', (l) => l.some((line) => line.includes('"rt.end"')));
      await follow.stop();
      const events = checkLines(follow.lines, 'cityStream').filter((e) => e.type === 'rt.city');
      expect(events.map((e) => e.seq)).to.deep.equal(later);
      expect(later[0]).to.equal(Number(head) + 1);
      expect(events.map((e) => e.subject)).to.deep.equal(['r0', 'r1', 'r2', 'live']);
    });

    it('supervisor round trip: --seq, then --follow --after-cursor prints exactly the later events', async function () {
      const [cursorText] = expectSuccess(await ctl(['--seq']));
      const cursor = parseCursor(cursorText);
      const recorded: string[] = [];
      for (let i = 0; i < 3; i++) {
        await record('alpha', { type: 'rt.sup', subject: `a${i}` });
        recorded.push(`alpha/a${i}`);
      }
      await record('beta', { type: 'rt.sup', subject: 'b0' });
      recorded.push('beta/b0');
      const follow = start(['--follow', '--after-cursor', cursorText]);
      const rtSeen = (l: string[]) => l.filter((line) => line.includes('"rt.sup"')).length;
      await follow.waitFor('the 4 recorded events', (l) => rtSeen(l) >= 4);
      await record('alpha', { type: 'rt.sup', subject: 'live' });
      recorded.push('alpha/live');
      await follow.waitFor('the live event', (l) => rtSeen(l) >= 5);
      // Anything printed twice would come before an event recorded after them all.
      await record('alpha', { type: 'rt.end' });
      await follow.waitFor('the last event', (l) => l.some((line) => line.includes('"rt.end"')));
      await follow.stop();
      const events = checkLines(follow.lines, 'supervisorStream');
      for (const e of events) {
        const before = cursor.get(logOf(e));
        expect(before, `the cursor names the log of ${JSON.stringify(e)}`).to.not.equal(undefined);
        expect(e.seq, `${JSON.stringify(e)} comes after ${cursorText}`).to.be.greaterThan(before!);
      }
      const keys = events.map((e) => `${e.city}/${e.seq}/${e.type}`);
      expect(new Set(keys).size, 'no event printed twice').to.equal(keys.length);
      const rt = events.filter((e) => e.type === 'rt.sup').map((e) => `${e.city}/${e.subject}`);
      expect([...rt].sort()).to.deep.equal([...recorded].sort());
      expect(rt.filter((k) => k.startsWith('alpha/'))).to.deep.equal([
        'alpha/a0',
        'alpha/a1',
        'alpha/a2',
        'alpha/live',
      ]);
    });

    it('supervisor round trip: --seq, then --watch --after-cursor prints the first later match', async function () {
      const [cursorText] = expectSuccess(await ctl(['--seq']));
      await record('beta', { type: 'rt.watch', subject: 'w0' });
      await record('alpha', { type: 'rt.watch', subject: 'w1' });
      const out = expectSuccess(
        await ctl(['--watch', '--after-cursor', cursorText, '--type', 'rt.watch', '--timeout', '10s']),
      );
      expect(checkLines(out, 'supervisorStream').map((e) => [e.city, e.subject])).to.deep.equal([['beta', 'w0']]);
    });
  });

  describe('--watch', function () {
    /** Records matching events until `child` exits (it may not be connected yet); returns the seqs recorded. */
    async function feedUntilExit(child: CtlProcess, city: string, type: string): Promise<number[]> {
      const seqs: number[] = [];
      await waitUntil(
        'the watch to exit',
        async () => {
          if (child.exitCode !== undefined) return true;
          seqs.push(await record(city, { type, subject: `feed${seqs.length}` }));
          return false;
        },
        WAIT_MS,
        200,
      );
      return seqs;
    }

    it('city scope: prints the first matching event (not earlier ones) and exits 0', async function () {
      await record('beta', { type: 'watch.city', subject: 'before' });
      const watch = start(['--watch', '--city', 'beta', '--type', 'watch.city', '--timeout', '30s']);
      const fed = await feedUntilExit(watch, 'beta', 'watch.city');
      expect(await watch.exited()).to.equal(0);
      expect(watch.stderr).to.equal('');
      expect(watch.lines).to.have.length(1);
      const [event] = checkLines(watch.lines, 'cityStream');
      expect(event.type).to.equal('watch.city');
      expect(fed).to.include(event.seq);
    });

    it('supervisor scope: prints the first matching tagged event and exits 0', async function () {
      const watch = start(['--watch', '--type', 'watch.sup', '--payload-match', 'n=1']);
      const seqs: number[] = [];
      await waitUntil(
        'the watch to exit',
        async () => {
          if (watch.exitCode !== undefined) return true;
          seqs.push(await record('alpha', { type: 'watch.sup', payload: { n: 0 } }));
          seqs.push(await record('alpha', { type: 'watch.sup', payload: { n: 1 } }));
          return false;
        },
        WAIT_MS,
        200,
      );
      expect(await watch.exited()).to.equal(0);
      expect(watch.stderr).to.equal('');
      expect(watch.lines).to.have.length(1);
      const [event] = checkLines(watch.lines, 'supervisorStream');
      expect(event).to.deep.include({ city: 'alpha', type: 'watch.sup', payload: { n: 1 } });
      expect(seqs).to.include(event.seq);
    });

    it('--timeout 500ms with no match: exit 0, empty stdout and stderr', async function () {
      expect(await ctl(['--watch', '--timeout', '500ms', '--type', 'never.happens'])).to.deep.equal({
        code: 0,
        stdout: '',
        stderr: '',
      });
      expect(await ctl(['--watch', '--city', 'alpha', '--timeout', '500ms', '--type', 'never.happens'])).to.deep.equal({
        code: 0,
        stdout: '',
        stderr: '',
      });
    });

    it('--since applies to streams too: an older event replayed after --after is not a match', async function () {
      const args = ['--watch', '--city', 'alpha', '--after', '0', '--type', 'since.test', '--timeout', '1500ms'];
      const old = checkLines(expectSuccess(await ctl(args)), 'cityStream');
      expect(old.map((e) => e.subject)).to.deep.equal(['old']);
      // Since just after it: the first match is a later one (the list test's 'new'), or none before --timeout.
      const later = new Date(Date.parse(old[0].ts) + 1).toISOString();
      const since = checkLines(expectSuccess(await ctl([...args, '--since', later])), 'cityStream');
      expect(since.map((e) => e.subject)).to.not.include('old');
    });

    it('--timeout bounds the whole run: a supervisor that never answers is given up on, silently', async function () {
      // Accepts, reads and never answers.
      const held = new Set<Socket>();
      const silent = createNetServer((socket) => held.add(socket.on('error', () => undefined).resume()));
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      const address = silent.address();
      const api = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
      try {
        for (const scope of [[], ['--city', 'alpha']]) {
          // The same run with an hour to wait is the control: --timeout, not anything else, ends the first, which
          // exits while the other still waits on the same silent supervisor. Neither gives up on an answer sooner
          // (CTL_TIMEOUT, 10 s unless set, would end both, with an error).
          const env = { CTL_TIMEOUT: '1h' };
          const unbounded = start(['--watch', '--timeout', '1h', ...scope, '--api', api], { env });
          const bounded = start(['--watch', '--timeout', '1s', ...scope, '--api', api], { env });
          expect(await bounded.exited(), scope.join(' ')).to.equal(0);
          expect({ lines: bounded.lines, stderr: bounded.stderr }).to.deep.equal({ lines: [], stderr: '' });
          expect(unbounded.running, `--timeout 1h ${scope.join(' ')} still waiting`).to.equal(true);
          await unbounded.stop();
        }
      } finally {
        for (const socket of held) socket.destroy(); // a run still waiting would hold close() up
        await new Promise<void>((resolve) => silent.close(() => resolve()));
      }
    });

    it('--after N (city): resumes after N and prints the first match after it', async function () {
      const base = await cityHead('beta');
      const m1 = await record('beta', { type: 'watch.after', subject: 'm1' });
      await record('beta', { type: 'watch.other', subject: 'x' });
      const m2 = await record('beta', { type: 'watch.after', subject: 'm2' });
      const first = checkLines(
        expectSuccess(await ctl(['--watch', '--city', 'beta', '--after', String(base), '--type', 'watch.after'])),
        'cityStream',
      );
      expect(first.map((e) => [e.seq, e.subject])).to.deep.equal([[m1, 'm1']]);
      const second = checkLines(
        expectSuccess(await ctl(['--watch', '--city', 'beta', '--after', String(m1), '--type', 'watch.after'])),
        'cityStream',
      );
      expect(second.map((e) => [e.seq, e.subject])).to.deep.equal([[m2, 'm2']]);
      const any = checkLines(
        expectSuccess(await ctl(['--watch', '--city', 'beta', '--after', String(m1)])),
        'cityStream',
      );
      expect(any.map((e) => e.subject)).to.deep.equal(['x']);
    });
  });

  describe('--follow', function () {
    it('prints matching events as they happen, in both scopes, and never a heartbeat', async function () {
      const city = start(['--follow', '--city', 'alpha', '--type', 'follow.tick']);
      const all = start(['--follow', '--type', 'follow.tick']);
      // Each follower starts at the head it reads when it starts: feed until both have printed something.
      const ready: number[] = [];
      await waitUntil(
        'both followers to print',
        async () => {
          if (city.lines.length > 0 && all.lines.length > 0) return true;
          ready.push(await record('alpha', { type: 'follow.tick', subject: 'ready', payload: { i: ready.length } }));
          return false;
        },
        WAIT_MS,
        150,
      );
      // Heartbeats go out meanwhile (every 250 ms): two of them on a stream of our own, opened now, say so.
      const beats = await SseStreamReader.open(`${sup.base}/v0/city/alpha/events/stream`);
      const live: number[] = [];
      for (let i = 0; i < 5; i++) {
        live.push(await record('alpha', { type: 'follow.tick', subject: 'live', payload: { i } }));
        await record('alpha', { type: 'follow.other', subject: 'noise' });
      }
      for (let heartbeats = 0; heartbeats < 2;) {
        const frame = await beats.next();
        if (!frame) throw new Error('the heartbeat stream ended');
        if (frame.event === 'heartbeat') heartbeats++;
      }
      beats.close();
      for (const child of [city, all]) {
        await child.waitFor('the live events', (l) => l.filter((line) => line.includes('"live"')).length >= 5);
      }
      expect(city.running && all.running, 'still following').to.equal(true);
      await city.stop();
      await all.stop();
      for (const [child, kind] of [
        [city, 'cityStream'],
        [all, 'supervisorStream'],
      ] as const) {
        const events = checkLines(child.lines, kind);
        expect(events.every((e) => e.type === 'follow.tick')).to.equal(true);
        const seqs = events.map((e) => e.seq);
        const firstReady = ready.indexOf(seqs[0]);
        expect(firstReady, `first printed seq ${seqs[0]} is one of the ready events`).to.be.at.least(0);
        expect(seqs).to.deep.equal([...ready.slice(firstReady), ...live]);
        if (kind === 'supervisorStream') expect(events.every((e) => e.city === 'alpha')).to.equal(true);
      }
    });

    it('a connection cut again and again loses nothing and repeats nothing', async function () {
      this.timeout(120_000);
      await sup.createCity('chaos');
      const proxy = await ChaosProxy.start(sup.port, { minMs: 150, maxMs: 600 });
      cleanups.push(() => proxy.close());
      const head = await cityHead('chaos');
      const city = start([
        '--follow',
        '--city',
        'chaos',
        '--after',
        String(head),
        '--type',
        'chaos.tick',
        '--api',
        proxy.url,
      ]);
      const [cursor] = expectSuccess(await ctl(['--seq']));
      const all = start(['--follow', '--after-cursor', cursor, '--type', 'chaos.tick', '--api', proxy.url]);
      // At least 300 events, and on until the proxy has cut the connections a few times.
      let total = 0;
      while (total < 300 || proxy.cuts < 4) {
        await record('chaos', { type: 'chaos.tick', payload: { i: total } });
        if (total % 3 === 0) await record('chaos', { type: 'chaos.noise', payload: { i: total } });
        total++;
      }
      // Anything printed twice would come before an event recorded after them all.
      await record('chaos', { type: 'chaos.tick', payload: { end: true } });
      for (const child of [city, all]) {
        await child.waitFor(`all ${total} events`, (l) => l.some((line) => line.includes('"end":true')), 60_000);
      }
      for (const child of [city, all]) child.lines.splice(-1);
      expect(city.running && all.running, 'still following').to.equal(true);
      await city.stop();
      await all.stop();
      expect(proxy.cuts, 'connections cut by the proxy').to.be.at.least(4);
      for (const [child, kind] of [
        [city, 'cityStream'],
        [all, 'supervisorStream'],
      ] as const) {
        const events = checkLines(child.lines, kind);
        expect(
          events.map((e) => e.payload.i),
          `${kind}: each event exactly once, in order`,
        ).to.deep.equal(Array.from({ length: total }, (_, i) => i));
        const seqs = events.map((e) => e.seq);
        expect(seqs).to.deep.equal([...seqs].sort((a, b) => a - b));
      }
    });

    it('keeps following a city whose controller is killed (SIGKILL) and restarted', async function () {
      this.timeout(120_000);
      await sup.createCity('phoenix');
      const head = await cityHead('phoenix');
      const city = start(['--follow', '--city', 'phoenix', '--after', String(head), '--type', 'kill.tick']);
      const [cursor] = expectSuccess(await ctl(['--seq']));
      const all = start(['--follow', '--after-cursor', cursor, '--type', 'kill.tick']);
      for (let i = 0; i < 3; i++) await record('phoenix', { type: 'kill.tick', payload: { i } });
      for (const child of [city, all]) await child.waitFor('the first 3 events', (l) => l.length >= 3);

      const before = await sup.city('phoenix');
      expect(before?.pid, 'the controller pid').to.be.a('number');
      process.kill(before!.pid!, 'SIGKILL');
      await waitUntil(
        'phoenix to run again under a new controller',
        async () => {
          const now = await sup.city('phoenix');
          return now?.running === true && now.pid !== undefined && now.pid !== before!.pid;
        },
        30_000,
        100,
      );
      for (let i = 3; i < 6; i++) {
        await waitUntil(
          `event ${i} to be recorded`,
          () => record('phoenix', { type: 'kill.tick', payload: { i } }),
          WAIT_MS,
          200,
        );
      }
      for (const child of [city, all]) await child.waitFor('all 6 events', (l) => l.length >= 6, 60_000);
      // Anything printed twice would come before an event recorded after them all.
      await record('phoenix', { type: 'kill.tick', payload: { end: true } });
      for (const child of [city, all]) {
        await child.waitFor('the last event', (l) => l.some((line) => line.includes('"end":true')), 60_000);
        child.lines.splice(-1);
      }
      expect(city.running && all.running, 'still following').to.equal(true);
      await city.stop();
      await all.stop();
      for (const [child, kind] of [
        [city, 'cityStream'],
        [all, 'supervisorStream'],
      ] as const) {
        const events = checkLines(child.lines, kind);
        expect(
          events.map((e) => e.payload.i),
          kind,
        ).to.deep.equal([0, 1, 2, 3, 4, 5]);
      }
    });
  });

  describe('a reader that goes away: ctl ends at once, even while nothing is printed', function () {
    /** `ctl events ARGS | READER` in bash; resolves when the whole pipeline has ended (so has ctl). */
    function pipeline(args: string[], reader: string): { ended: Promise<void>; output: () => string } {
      const command = [process.execPath, ctlEntryPath(), 'events', ...args].map((w) => `'${w}'`).join(' ');
      // A process group of its own, so that cleanup can end the whole pipeline if a test fails.
      const child = spawn('bash', ['-c', `${command} | ${reader}`], {
        env: { ...sup.env, CTL_CITY: undefined },
        stdio: ['ignore', 'pipe', 'inherit'],
        detached: true,
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const ended = once(child, 'exit').then(() => undefined);
      cleanups.push(async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        process.kill(-child.pid!, 'SIGKILL');
        await ended;
      });
      return { ended, output: () => output };
    }

    it('ctl events --follow | head -1: ends once head has its line, though no other event comes', async function () {
      // Heartbeats every 250 ms are never printed; only an end noticed without printing ends it (mocha's time-out
      // says it did not).
      this.timeout(10_000);
      const head = await cityHead('beta');
      const { ended, output } = pipeline(['--follow', '--city', 'beta', '--after', String(head)], 'head -1');
      await record('beta', { type: 'reader.one' });
      await ended;
      expect(output()).to.include('"reader.one"');
    });

    it('ctl events --follow | true, and --watch: end although they never print', async function () {
      this.timeout(10_000);
      await pipeline(['--follow', '--city', 'beta'], 'true').ended;
      await pipeline(['--follow'], 'true').ended;
      await pipeline(['--watch', '--type', 'never.happens', '--timeout', '1h'], 'true').ended;
    });
  });

  describe('on a terminal: one readable line per event', function () {
    /** `ctl events ARGS` with stdout on a terminal. */
    async function onTerminal(args: string[], env: NodeJS.ProcessEnv = {}): Promise<string[]> {
      const result = await runCtlOnTerminal(['events', ...args], {
        env: { ...sup.env, CTL_CITY: undefined, ...env },
        cwd: sup.root,
        columns: 200,
      });
      expect(result.code, result.stdout).to.equal(0);
      return result.stdout === '' ? [] : result.stdout.split('\n');
    }

    it('local time HH:MM:SS, type, subject, message; the same events as the JSON Lines', async function () {
      await record('beta', { type: 'tty.test', subject: 'subj-1', message: 'a message' });
      await record('beta', { type: 'tty.test', subject: 'subj-2' });
      const json = checkLines(expectSuccess(await ctl(['--city', 'beta', '--type', 'tty.test'])), 'cityList');
      const shown = await onTerminal(['--city', 'beta', '--type', 'tty.test'], { NO_COLOR: '1' });
      const time = (ts: string) => new Date(ts).toTimeString().slice(0, 8);
      expect(shown).to.deep.equal(
        json.map((e) =>
          [time(e.ts), e.type.padEnd(24), e.subject, ...(e.message ? [e.message] : [])].join('  ').trimEnd(),
        ),
      );
    });

    it('supervisor scope: the city too; the type coloured unless NO_COLOR', async function () {
      await record('beta', { type: 'tty.sup', subject: 'colourful' });
      const [line] = await onTerminal(['--type', 'tty.sup']);
      expect(line.startsWith('\u001b[2m'), 'the time dimmed').to.equal(true);
      expect(line).to.include('\u001b[36mtty.sup');
      expect(stripVTControlCharacters(line)).to.match(/^\d\d:\d\d:\d\d {2}beta +tty\.sup +colourful$/);
      const [plain] = await onTerminal(['--type', 'tty.sup'], { NO_COLOR: '1' });
      expect(plain).to.match(/^\d\d:\d\d:\d\d {2}beta +tty\.sup +colourful$/);
    });

    it('--json: JSON Lines on a terminal too; --seq stays plain text', async function () {
      const shown = await onTerminal(['--city', 'beta', '--type', 'tty.test', '--json']);
      expect(checkLines(shown, 'cityList').map((e) => e.subject)).to.deep.equal(['subj-1', 'subj-2']);
      expect(await onTerminal(['--city', 'beta', '--seq'])).to.deep.equal([String(await cityHead('beta'))]);
    });

    it('--watch on a terminal prints its event as a line too', async function () {
      const head = await cityHead('beta');
      await record('beta', { type: 'tty.watch', subject: 'watched' });
      const shown = await onTerminal(['--city', 'beta', '--watch', '--after', String(head), '--type', 'tty.watch'], {
        NO_COLOR: '1',
      });
      expect(shown).to.have.length(1);
      expect(shown[0]).to.match(/^\d\d:\d\d:\d\d {2}tty\.watch +watched$/);
    });
  });

  describe('errors: exit 1, one stderr line `ctl events: …`, empty stdout', function () {
    it('--after with --after-cursor (checked before anything else)', async function () {
      const message = 'mutually exclusive';
      expectFailure(await ctl(['--follow', '--after', '1', '--after-cursor', 'alpha:1']), message);
      expectFailure(await ctl(['--after', '1', '--after-cursor', 'alpha:1']), message);
      expectFailure(await ctl(['--watch', '--after', '1', '--after-cursor', 'alpha:1', '--api', deadApi]), message);
    });

    it('--after / --after-cursor without --follow or --watch (also with --seq)', async function () {
      const message =
        '--after/--after-cursor require --follow or --watch (they resume a stream); use --since to bound a list by time';
      expect(expectFailure(await ctl(['--after', '1', '--city', 'alpha']))).to.equal(message);
      expect(expectFailure(await ctl(['--after', '1', '--seq', '--city', 'alpha']))).to.equal(message);
      expect(expectFailure(await ctl(['--after-cursor', 'alpha:1']))).to.equal(message);
      expect(expectFailure(await ctl(['--after-cursor', 'alpha:1', '--seq']))).to.equal(message);
    });

    it('a bad --since, before the supervisor is asked', async function () {
      const message =
        'invalid --since "bogus": expected an RFC 3339 time (2026-11-23T09:00:00Z) or a duration such as 90s, 5m, 1h30m or 1d (a bare number is seconds)';
      expect(expectFailure(await ctl(['--since', 'bogus']))).to.equal(message);
      expect(expectFailure(await ctl(['--since', 'bogus', '--api', deadApi]))).to.equal(message);
      expect(expectFailure(await ctl(['--follow', '--since', '5x', '--api', deadApi]))).to.match(
        /^invalid --since "5x": /,
      );
      expect(expectFailure(await ctl(['--since', '2026-13-45T00:00:00Z', '--api', deadApi]))).to.match(
        /^invalid --since "2026-13-45T00:00:00Z": /,
      );
    });

    it('a bad --timeout (--watch), before the supervisor is asked', async function () {
      const message =
        'invalid --timeout "bogus": expected a duration such as 90s, 5m, 1h30m or 1d (a bare number is seconds)';
      expect(expectFailure(await ctl(['--watch', '--timeout', 'bogus']))).to.equal(message);
      expect(expectFailure(await ctl(['--watch', '--timeout', 'bogus', '--api', deadApi]))).to.equal(message);
      expect(expectFailure(await ctl(['--watch', '--timeout', '0', '--api', deadApi]))).to.equal(
        'invalid --timeout "0": must be more than zero',
      );
    });

    it('a flag that takes a value, given none (last, or followed by another flag)', async function () {
      for (const args of [['--payload-match'], ['--type'], ['--type', '--follow'], ['--city', 'alpha', '--since']]) {
        const flag = args.find((a, i) => a.startsWith('--') && (i === args.length - 1 || args[i + 1].startsWith('--')));
        expect(expectFailure(await ctl([...args, '--api', deadApi]))).to.equal(`${flag} needs a value`);
      }
    });

    it('--payload-match without a key or without =', async function () {
      for (const arg of ['novalue', '=x']) {
        const message = `invalid --payload-match "${arg}": expected key=value`;
        expect(expectFailure(await ctl(['--payload-match', arg]))).to.equal(message);
        expect(
          expectFailure(await ctl(['--follow', '--city', 'alpha', '--payload-match', 'ok=1', '--payload-match', arg])),
        ).to.equal(message);
        expect(expectFailure(await ctl(['--watch', '--payload-match', arg, '--api', deadApi]))).to.equal(message);
      }
    });

    it('--after in supervisor scope (--follow and --watch)', async function () {
      const message = '--after is only valid when a city is in scope; use --after-cursor for supervisor events';
      expect(expectFailure(await ctl(['--follow', '--after', '1']))).to.equal(message);
      expect(expectFailure(await ctl(['--watch', '--after', '1']))).to.equal(message);
    });

    it('--after-cursor in city scope (--city, or the working directory)', async function () {
      const message = '--after-cursor is only valid in supervisor scope';
      expect(expectFailure(await ctl(['--follow', '--city', 'alpha', '--after-cursor', 'alpha:1']))).to.equal(message);
      expect(
        expectFailure(await ctl(['--watch', '--after-cursor', 'alpha:1'], { cwd: sup.cityDir('alpha') })),
      ).to.equal(message);
    });

    it('an unknown city', async function () {
      expectFailure(await ctl(['--city', 'nosuch']), 'nosuch');
      expectFailure(await ctl(['--follow', '--city', 'nosuch']), 'nosuch');
      expectFailure(await ctl(['--seq'], { env: { CTL_CITY: 'nosuch' } }), 'nosuch');
      expectFailure(await ctl(['--city', join(sup.root, 'home')]), join(sup.root, 'home'));
    });

    it('an unreachable supervisor, in every mode', async function () {
      for (const args of [[], ['--seq'], ['--watch', '--timeout', '5s'], ['--follow'], ['--city', 'alpha']]) {
        const message = expectFailure(await ctl([...args, '--api', deadApi]));
        expect(message, args.join(' ')).to.include(deadApi);
      }
      expectFailure(await ctl(['--follow'], { env: { CTL_API: deadApi } }), deadApi);
    });

    it('a problem response: a stopped city (404 not_found:)', async function () {
      const res = await fetch(`${sup.base}/v0/city/gamma/stop`, { method: 'POST', headers: CSRF });
      expect(res.status).to.be.lessThan(300);
      await waitUntil('gamma to stop', async () => (await sup.city('gamma'))?.running === false);
      const detail = 'not_found: city not found or not running: gamma';
      expect(expectFailure(await ctl(['--city', 'gamma']))).to.equal(detail);
      expect(expectFailure(await ctl(['--city', 'gamma', '--seq']))).to.equal(detail);
      expect(expectFailure(await ctl(['--city', 'gamma', '--watch', '--timeout', '5s']))).to.equal(detail);
      // A city that is not running when --follow starts is an error, with or without a position.
      expect(expectFailure(await ctl(['--city', 'gamma', '--follow']))).to.equal(detail);
      expect(expectFailure(await ctl(['--city', 'gamma', '--follow', '--after', '1']))).to.equal(detail);
    });

    it('a malformed cursor (400 invalid_cursor, or refused before asking)', async function () {
      for (const mode of ['--follow', '--watch']) {
        expectFailure(await ctl([mode, '--after-cursor', 'alpha:x']), 'alpha:x');
      }
      expectFailure(await ctl(['--follow', '--city', 'alpha', '--after', 'x']), /"x"/);
    });

    it('a reader that goes away (stdout closed): exit 0, nothing on stderr', async function () {
      const child = spawn(process.execPath, [ctlEntryPath(), 'events', '--city', 'alpha'], {
        env: { ...sup.env, CTL_CITY: undefined },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout.destroy();
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const [code] = (await once(child, 'exit')) as [number | null];
      expect(stderr).to.equal('');
      expect(code).to.equal(0);
    });

    it('rotate in supervisor scope', async function () {
      expect(expectCliFailure(await ctl(['rotate']), 'events rotate')).to.equal(
        'rotate requires a city in scope; run from a city directory or pass --city',
      );
    });

    describe('with no city registered', function () {
      let empty: TestSupervisor;

      before(async function () {
        empty = await TestSupervisor.start({ env: { CTL_SSE_HEARTBEAT_MS: '250' } });
      });

      after(async function () {
        if (empty) await empty.cleanup();
      });

      function emptyCtl(args: string[]): Promise<CliResult> {
        return runCtl(['events', ...args], {
          env: { ...empty.env, CTL_CITY: undefined },
          cwd: empty.root,
          timeoutMs: 6_000,
        });
      }

      it('the list and --seq still work (the supervisor log)', async function () {
        const events = checkLines(expectSuccess(await emptyCtl([])), 'supervisorList');
        expect(events.map((e) => e.city)).to.deep.equal(['__supervisor__']);
        expect(expectSuccess(await emptyCtl(['--seq']))).to.deep.equal(['__supervisor__:1']);
      });

      it('the stream answers 503 no_providers: --watch reports it', async function () {
        expectFailure(await emptyCtl(['--watch', '--timeout', '5s']), /^no_providers: /);
      });

      it('the stream answers 503 no_providers: --follow reports it (a fatal setup error, not retried)', async function () {
        expectFailure(await emptyCtl(['--follow']), /^no_providers: /);
      });
    });
  });

  describe('stream frames, from a stand-in supervisor', function () {
    let api: string;
    let streamBody: string;
    let endStream: boolean;
    let server: Server | undefined;
    const open = new Set<ServerResponse>();

    before(async function () {
      server = createHttpServer((req, res) => {
        const path = (req.url ?? '').split('?')[0];
        const json = (body: unknown) => {
          res.writeHead(200, { 'Content-Type': 'application/json' });
          res.end(JSON.stringify(body));
        };
        if (path === '/v0/cities') return json({ items: [], total: 0 });
        if (path === '/v0/events') return json({ event_cursor: '__supervisor__:0', items: [], total: 0 });
        if (path === '/v0/events/stream') {
          res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
          res.write(streamBody);
          if (endStream) res.end();
          else open.add(res);
          return;
        }
        res.writeHead(404, { 'Content-Type': 'application/problem+json' });
        res.end(JSON.stringify({ status: 404, detail: 'not_found: no such route' }));
      });
      await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
      const address = server.address();
      api = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    });

    after(async function () {
      if (!server) return;
      for (const res of open) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server!.close(() => resolve()));
    });

    const good = (seq: number) =>
      JSON.stringify({ seq, type: 'fake.ok', ts: new Date().toISOString(), actor: 't', payload: {}, city: 'fake' });

    it('error: a frame whose data is not JSON is one line `ctl events: decode: …`, exit 1 (--watch and --follow)', async function () {
      streamBody = 'event: tagged_event\ndata: not-json\n\n';
      endStream = false;
      expectFailure(await ctl(['--watch', '--timeout', '10s', '--api', api]), /^decode: /);
      expectFailure(await ctl(['--follow', '--api', api]), /^decode: /);
    });

    it('heartbeats, comments and frames of other names are never printed', async function () {
      streamBody = [
        ': a comment\n\n',
        `event: heartbeat\ndata: {"timestamp":"${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}"}\n\n`,
        'event: something_else\ndata: {"seq":9}\n\n',
        `id: fake:1\nevent: tagged_event\ndata: ${good(1)}\n\n`,
      ].join('');
      endStream = false;
      const out = expectSuccess(await ctl(['--watch', '--timeout', '10s', '--api', api]));
      expect(checkLines(out, 'supervisorStream').map((e) => e.seq)).to.deep.equal([1]);
    });

    it('a frame with empty data is skipped, not a decode error (reference: never printed)', async function () {
      streamBody = ['event: tagged_event\ndata:\n\n', `id: fake:2\nevent: tagged_event\ndata: ${good(2)}\n\n`].join('');
      endStream = false;
      const out = expectSuccess(await ctl(['--watch', '--timeout', '10s', '--api', api]));
      expect(checkLines(out, 'supervisorStream').map((e) => e.seq)).to.deep.equal([2]);
    });

    it('a frame with no `event:` line counts as data (reference)', async function () {
      streamBody = `id: fake:3\ndata: ${good(3)}\n\n`;
      endStream = false;
      const out = expectSuccess(await ctl(['--watch', '--timeout', '3s', '--api', api]));
      expect(checkLines(out, 'supervisorStream').map((e) => e.seq)).to.deep.equal([3]);
    });

    it('error: a --watch stream that ends before a match is one line, exit 1', async function () {
      streamBody = `id: fake:1\nevent: tagged_event\ndata: ${good(1)}\n\n`;
      endStream = true;
      expectFailure(
        await ctl(['--watch', '--timeout', '10s', '--type', 'other', '--api', api]),
        'stream ended before a matching event arrived',
      );
    });
  });

  describe('ctl events rotate', function () {
    it('prints one JSON line: rotated, the archive, the anchor event', async function () {
      await record('rot', { type: 'rot.tick' });
      const headBefore = await cityHead('rot');
      const out = expectSuccess(await ctl(['rotate', '--city', 'rot']));
      expect(out, 'exactly one line').to.have.length(1);
      const body = JSON.parse(out[0]) as {
        rotated: boolean;
        archive: { path: string; first_seq: number; last_seq: number; compression_status: string };
        anchor_event: { seq: number; type: string; ts: string };
      };
      expect(body).to.not.have.property('ok');
      expect(body.rotated).to.equal(true);
      expect(body.archive.first_seq).to.equal(1);
      expect(body.archive.last_seq).to.equal(headBefore);
      expect(body.archive.compression_status).to.be.oneOf(['pending', 'complete']);
      expect(body.archive.path.startsWith(join(sup.cityDir('rot'), '.ctl'))).to.equal(true);
      expect(body.anchor_event).to.include({ seq: headBefore + 1, type: 'events.rotated' });
    });

    it('--wait: compression_status complete, and the archive is on disk', async function () {
      await record('rot', { type: 'rot.tick' });
      const out = expectSuccess(await ctl(['rotate', '--wait'], { cwd: sup.cityDir('rot') }));
      expect(out, 'exactly one line').to.have.length(1);
      const body = JSON.parse(out[0]) as { rotated: boolean; archive: { path: string; compression_status: string } };
      expect(body.rotated).to.equal(true);
      expect(body.archive.compression_status).to.equal('complete');
      expect(body.archive.path).to.match(/\.gz$/);
      expect(readdirSync(join(sup.cityDir('rot'), '.ctl'))).to.include(body.archive.path.split('/').pop());
    });

    it('on a terminal: one line saying what was archived (JSON with --json)', async function () {
      await record('rot', { type: 'rot.tick' });
      const env = { ...sup.env, CTL_CITY: undefined };
      const shown = await runCtlOnTerminal(['events', 'rotate', '--city', 'rot'], { env, cwd: sup.root });
      expect(shown.code).to.equal(0);
      expect(shown.stdout).to.match(
        /^Rotated rot's event log: events \d+–\d+ are in \/.*\.ctl\/events\.jsonl\.\S+ \(compression (pending|complete)\)$/,
      );
      await record('rot', { type: 'rot.tick' });
      const json = await runCtlOnTerminal(['events', 'rotate', '--city', 'rot', '--json'], { env, cwd: sup.root });
      expect(JSON.parse(json.stdout)).to.include({ rotated: true });
    });

    it('rotation is invisible to the list but for the anchors', async function () {
      const events = checkLines(expectSuccess(await ctl(['--city', 'rot'])), 'cityList');
      const head = await cityHead('rot');
      expect(events.map((e) => e.seq)).to.deep.equal(Array.from({ length: head }, (_, i) => i + 1));
      expect(events.filter((e) => e.type === 'events.rotated')).to.have.length(4);
      expect(events.filter((e) => e.type === 'rot.tick')).to.have.length(4);
    });
  });
});
