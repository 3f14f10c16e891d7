import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { expect } from 'chai';
import { execa } from 'execa';
import type { Bead, BeadDepsResponse, ListBodyBead } from '../shared/dto/beads.js';
import type { ConvoyCheckResponse, ConvoyGetResponse } from '../shared/dto/convoys.js';
import type { MailListBody, Message } from '../shared/dto/mail.js';
import { ctlEntryPath, packageRoot } from '../shared/paths.js';
import {
  expectFailure as expectCliFailure,
  expectSuccess,
  runCtlOnTerminal,
  runCtlWithTerminal,
  type CliResult,
} from './helpers/cli.js';
import { CSRF, freePort, TestSupervisor } from './helpers/supervisor.js';

// `ctl bead`, `ctl mail` and `ctl convoy`, run as the real built binary against a real supervisor and its
// cities. Contract (decisions.md, "The `ctl` client"): city scope from --city NAME|PATH, CTL_CITY, or the
// working directory; a table or a short line for people, the API's JSON with --json; a failure is exactly one
// line on stderr, `ctl <command>: …`, exit status 1, nothing on stdout.

const NO_CITY = 'no city in scope; pass --city, set CTL_CITY, or run inside a city directory';

/** The failure contract, with a string `pattern` as the whole message. */
function expectFailure(result: CliResult, command: string, pattern?: RegExp | string): string {
  const message = expectCliFailure(result, command, typeof pattern === 'string' ? undefined : pattern);
  if (typeof pattern === 'string') expect(message).to.equal(pattern);
  return message;
}

/** The one JSON line of a successful --json run. */
function jsonOf<T>(result: CliResult): T {
  const out = expectSuccess(result);
  expect(out, 'one line of JSON').to.have.length(1);
  return JSON.parse(out[0]) as T;
}

/** A table's header cells and rows (cells are separated by two or more spaces). */
function tableOf(out: string[]): { header: string[]; rows: string[][] } {
  const [header, ...rows] = out.map((l) => l.split(/ {2,}/));
  return { header, rows };
}

function ids(items: { id: string }[]): string[] {
  return items.map((i) => i.id);
}

describe('ctl bead, mail and convoy (real binary, real supervisor)', function () {
  this.timeout(120_000);

  let sup: TestSupervisor;

  /** Runs ctl from a directory outside every city, CTL_CITY unset unless given. */
  function ctl(args: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): Promise<CliResult> {
    return sup.ctl(args, { cwd: options.cwd, env: { CTL_CITY: undefined, ...options.env } });
  }

  /** Runs ctl with `--city alpha` (or another city). */
  function inAlpha(args: string[], city = 'alpha'): Promise<CliResult> {
    return ctl([...args, '--city', city]);
  }

  async function createBead(title: string, ...flags: string[]): Promise<Bead> {
    return jsonOf<Bead>(await inAlpha(['bead', 'create', title, '--json', ...flags]));
  }

  async function showBead(id: string): Promise<Bead> {
    return jsonOf<Bead>(await inAlpha(['bead', 'show', id, '--json']));
  }

  async function readyIds(): Promise<string[]> {
    return ids(jsonOf<ListBodyBead>(await inAlpha(['bead', 'ready', '--json', '--limit', '1000'])).items);
  }

  async function sendMail(to: string, subject: string, ...flags: string[]): Promise<Message> {
    return jsonOf<Message>(await inAlpha(['mail', 'send', '--to', to, '--subject', subject, '--json', ...flags]));
  }

  /** The problem detail the API itself answers for a GET, to compare with what the CLI prints. */
  async function apiDetail(path: string): Promise<string> {
    const res = await fetch(`${sup.base}${path}`, { headers: CSRF });
    expect(res.ok, `GET ${path} fails`).to.equal(false);
    return ((await res.json()) as { detail: string }).detail;
  }

  before(async function () {
    sup = await TestSupervisor.start();
    await sup.createCity('alpha');
    await sup.createCity('beta');
  });

  after(async function () {
    if (sup) await sup.cleanup();
  });

  describe('ctl bead create and show', function () {
    it('create prints one line naming the new bead; show prints its fields', async function () {
      const out = expectSuccess(
        await inAlpha([
          'bead',
          'create',
          'Fix the boiler',
          '--type',
          'bug',
          '--priority',
          '1',
          '--assignee',
          'mayor',
          '--description',
          'It leaks',
          '--label',
          'plumbing',
          '--label=urgent',
          '--meta',
          'floor=3',
          '--meta=room=b12',
        ]),
      );
      expect(out).to.have.length(1);
      const match = /^Created (alp-\d+): Fix the boiler$/.exec(out[0]);
      expect(match, out[0]).to.not.equal(null);
      const id = match![1];

      const shown = expectSuccess(await inAlpha(['bead', 'show', id]));
      const fields = Object.fromEntries(shown.map((l) => /^([^:]+):\s+(.*)$/.exec(l)!.slice(1, 3)));
      expect(fields).to.include({
        ID: id,
        Title: 'Fix the boiler',
        Status: 'open',
        Type: 'bug',
        Priority: '1',
        Assignee: 'mayor',
        Labels: 'plumbing, urgent',
        Metadata: 'floor=3, room=b12',
        Description: 'It leaks',
      });

      const bead = await showBead(id);
      expect(bead).to.include({
        id,
        title: 'Fix the boiler',
        status: 'open',
        issue_type: 'bug',
        priority: 1,
        assignee: 'mayor',
        description: 'It leaks',
      });
      expect(bead.labels).to.deep.equal(['plumbing', 'urgent']);
      expect(bead.metadata).to.deep.equal({ floor: '3', room: 'b12' });
    });

    it('create --json prints the 201 body: open, type task by default, the city prefix', async function () {
      const bead = await createBead('Plain task');
      expect(bead.id).to.match(/^alp-\d+$/);
      expect(bead).to.include({ title: 'Plain task', status: 'open', issue_type: 'task' });
      expect(bead.created_at).to.be.a('string');
      expect(bead).to.not.have.property('ok');
      expect(await showBead(bead.id)).to.deep.include({ id: bead.id, title: 'Plain task' });
    });

    it('create --parent links a child; --idempotency-key makes a repeat return the same bead', async function () {
      const parent = await createBead('Parent');
      const child = await createBead('Child', '--parent', parent.id);
      expect(child.parent).to.equal(parent.id);
      const first = await createBead('Once', '--idempotency-key', 'key-once');
      const again = await createBead('Once', '--idempotency-key', 'key-once');
      expect(again.id).to.equal(first.id);
    });
  });

  describe('ctl bead list', function () {
    let open: Bead;
    let closed: Bead;
    let other: Bead;

    before(async function () {
      open = await createBead('List open', '--type', 'feature', '--label', 'listing', '--assignee', 'lister');
      closed = await createBead('List closed', '--type', 'feature', '--label', 'listing');
      other = await createBead('List other', '--type', 'chore', '--label', 'listing-other');
      expectSuccess(await inAlpha(['bead', 'close', closed.id]));
    });

    it('prints a table of open beads, newest first', async function () {
      const { header, rows } = tableOf(expectSuccess(await inAlpha(['bead', 'list', '--limit', '1000'])));
      expect(header).to.deep.equal(['ID', 'STATUS', 'TYPE', 'PRI', 'ASSIGNEE', 'LABELS', 'TITLE']);
      const listed = rows.map((r) => r[0]);
      expect(listed).to.include(open.id).and.include(other.id).and.not.include(closed.id);
      expect(listed.indexOf(other.id)).to.be.lessThan(listed.indexOf(open.id));
      expect(rows.find((r) => r[0] === open.id)).to.deep.equal([
        open.id,
        'open',
        'feature',
        '-',
        'lister',
        'listing',
        'List open',
      ]);
    });

    it('--json prints the API list body; filters by --label, --type, --assignee, --status and --all', async function () {
      const byLabel = jsonOf<ListBodyBead>(await inAlpha(['bead', 'list', '--label', 'listing', '--json']));
      expect(Object.keys(byLabel).sort()).to.deep.equal(['items', 'total']);
      expect(ids(byLabel.items)).to.deep.equal([open.id]);
      expect(byLabel.total).to.equal(1);

      const all = jsonOf<ListBodyBead>(await inAlpha(['bead', 'list', '--label', 'listing', '--all', '--json']));
      expect(ids(all.items)).to.deep.equal([closed.id, open.id]);

      const closedOnly = jsonOf<ListBodyBead>(
        await inAlpha(['bead', 'list', '--label', 'listing', '--status', 'closed', '--json']),
      );
      expect(ids(closedOnly.items)).to.deep.equal([closed.id]);

      const chores = jsonOf<ListBodyBead>(await inAlpha(['bead', 'list', '--type', 'chore', '--json']));
      expect(ids(chores.items)).to.deep.equal([other.id]);

      const assigned = jsonOf<ListBodyBead>(await inAlpha(['bead', 'list', '--assignee', 'lister', '--json']));
      expect(ids(assigned.items)).to.deep.equal([open.id]);
    });

    it('--limit shows that many, and tells a person (stderr on a terminal) how many there are', async function () {
      const out = expectSuccess(await inAlpha(['bead', 'list', '--all', '--label', 'listing', '--limit', '1']));
      expect(out).to.have.length(2);
      expect(out[1].startsWith(`${closed.id} `)).to.equal(true);
      const args = ['bead', 'list', '--all', '--label', 'listing', '--limit', '1', '--city', 'alpha'];
      const person = await runCtlWithTerminal(args, { env: { ...sup.env, CTL_CITY: undefined }, cwd: sup.root });
      if (person) {
        expect(person.code).to.equal(0);
        expect(person.stdout.split('\n')).to.deep.equal(out);
        expect(person.stderr).to.equal('(1 of 2 shown; pass --limit for more)');
      }
      const body = jsonOf<ListBodyBead>(
        await inAlpha(['bead', 'list', '--all', '--label', 'listing', '--limit', '1', '--json']),
      );
      expect(ids(body.items)).to.deep.equal([closed.id]);
      expect(body.total).to.equal(2);
      expect(body.next_cursor).to.be.a('string');
    });

    it('says so when nothing matches (and --json prints an empty list)', async function () {
      expect(expectSuccess(await inAlpha(['bead', 'list', '--label', 'no-such-label']))).to.deep.equal(['No beads.']);
      expect(jsonOf(await inAlpha(['bead', 'list', '--label', 'no-such-label', '--json']))).to.deep.equal({
        items: [],
        total: 0,
      });
    });

    it('pages through the API when --limit is larger than a page (1000): no skip, no repeat', async function () {
      await sup.createCity('gamma');
      const created: string[] = [];
      for (let i = 0; i < 1005; i += 50) {
        const batch = Array.from({ length: Math.min(50, 1005 - i) }, async (_, j) => {
          const { data, error } = await sup.api.POST('/v0/city/{cityName}/beads', {
            params: { header: CSRF, path: { cityName: 'gamma' } },
            body: { title: `Bulk ${i + j}` },
          });
          if (!data) throw new Error(JSON.stringify(error));
          return data.id;
        });
        created.push(...(await Promise.all(batch)));
      }
      const some = jsonOf<ListBodyBead>(await ctl(['bead', 'list', '--city', 'gamma', '--limit', '1003', '--json']));
      expect(some.items).to.have.length(1003);
      expect(new Set(ids(some.items)).size).to.equal(1003);
      expect(some.total).to.equal(1005);
      expect(some.next_cursor).to.be.a('string');

      const every = jsonOf<ListBodyBead>(await ctl(['bead', 'list', '--city', 'gamma', '--limit', '5000', '--json']));
      expect(ids(every.items).sort()).to.deep.equal([...created].sort());
      expect(every).to.not.have.property('next_cursor');

      const table = expectSuccess(await ctl(['bead', 'list', '--city', 'gamma']));
      expect(table).to.have.length(101);

      // The ready queue pages the same way, oldest first.
      const byNumber = (a: string, b: string) => Number(a.split('-')[1]) - Number(b.split('-')[1]);
      const ready = jsonOf<ListBodyBead>(await ctl(['bead', 'ready', '--city', 'gamma', '--limit', '1003', '--json']));
      expect(ids(ready.items)).to.deep.equal([...created].sort(byNumber).slice(0, 1003));
      expect(ready.total).to.equal(1005);
      expect(ready.next_cursor).to.be.a('string');
      const allReady = jsonOf<ListBodyBead>(
        await ctl(['bead', 'ready', '--city', 'gamma', '--limit', '5000', '--json']),
      );
      expect(ids(allReady.items)).to.deep.equal([...created].sort(byNumber));
      const readyTable = expectSuccess(await ctl(['bead', 'ready', '--city', 'gamma']));
      expect(readyTable).to.have.length(101);
      const person = await runCtlWithTerminal(['bead', 'ready', '--city', 'gamma'], {
        env: { ...sup.env, CTL_CITY: undefined },
        cwd: sup.root,
      });
      if (person) expect(person.stderr).to.equal('(100 of 1005 shown; pass --limit for more)');
    });
  });

  describe('city scope', function () {
    let bead: Bead;

    before(async function () {
      bead = await createBead('Scoped');
    });

    it('--city NAME', async function () {
      expect(jsonOf<Bead>(await ctl(['bead', 'show', bead.id, '--json', '--city', 'alpha'])).id).to.equal(bead.id);
    });

    it('--city PATH (absolute and relative)', async function () {
      const abs = await ctl(['bead', 'show', bead.id, '--json', '--city', sup.cityDir('alpha')]);
      expect(jsonOf<Bead>(abs).id).to.equal(bead.id);
      const rel = await ctl(['bead', 'show', bead.id, '--json', '--city', './alpha'], { cwd: sup.citiesDir });
      expect(jsonOf<Bead>(rel).id).to.equal(bead.id);
    });

    it('CTL_CITY', async function () {
      const result = await ctl(['bead', 'show', bead.id, '--json'], { env: { CTL_CITY: 'alpha' } });
      expect(jsonOf<Bead>(result).id).to.equal(bead.id);
    });

    it('the working directory inside a city (at its root or below)', async function () {
      const below = join(sup.cityDir('alpha'), 'work', 'deep');
      mkdirSync(below, { recursive: true });
      for (const cwd of [sup.cityDir('alpha'), below]) {
        const result = await ctl(['bead', 'show', bead.id, '--json'], { cwd });
        expect(jsonOf<Bead>(result).id).to.equal(bead.id);
      }
    });

    it('--city wins over CTL_CITY, and CTL_CITY over the working directory', async function () {
      const cwd = sup.cityDir('beta');
      const byFlag = await ctl(['bead', 'show', bead.id, '--json', '--city', 'alpha'], {
        cwd,
        env: { CTL_CITY: 'beta' },
      });
      expect(jsonOf<Bead>(byFlag).id).to.equal(bead.id);
      const byEnv = await ctl(['bead', 'show', bead.id, '--json'], { cwd, env: { CTL_CITY: 'alpha' } });
      expect(jsonOf<Bead>(byEnv).id).to.equal(bead.id);
      // In beta, alpha's bead does not exist.
      expectFailure(
        await ctl(['bead', 'show', bead.id], { cwd }),
        'bead show',
        `not_found: bead not found: ${bead.id}`,
      );
    });

    it('each city has its own beads, with its own prefix', async function () {
      const inBeta = jsonOf<Bead>(await ctl(['bead', 'create', 'Beta work', '--json', '--city', 'beta']));
      expect(inBeta.id).to.match(/^bet-\d+$/);
      const betaList = jsonOf<ListBodyBead>(await ctl(['bead', 'list', '--json', '--city', 'beta']));
      expect(ids(betaList.items)).to.deep.equal([inBeta.id]);
    });

    it('an unregistered city name fails naming it', async function () {
      expectFailure(
        await ctl(['bead', 'list', '--city', 'nowhere']),
        'bead list',
        'no registered city named nowhere; run "ctl cities" to see registered cities',
      );
    });
  });

  describe('ctl bead ready: the ready rule', function () {
    it('a blocks dependency hides a bead until its target closes (and again when it reopens)', async function () {
      const target = await createBead('Target');
      const waiting = await createBead('Waiting');
      expect(await readyIds())
        .to.include(waiting.id)
        .and.include(target.id);

      const line = expectSuccess(await inAlpha(['bead', 'dep', 'add', waiting.id, target.id]));
      expect(line).to.deep.equal([`${waiting.id} depends on ${target.id} (blocks)`]);
      expect(await readyIds())
        .to.include(target.id)
        .and.not.include(waiting.id);
      expect((await showBead(waiting.id)).is_blocked).to.equal(true);

      expectSuccess(await inAlpha(['bead', 'close', target.id]));
      const ready = await readyIds();
      expect(ready).to.include(waiting.id).and.not.include(target.id);

      expectSuccess(await inAlpha(['bead', 'reopen', target.id]));
      expect(await readyIds())
        .to.include(target.id)
        .and.not.include(waiting.id);
    });

    it('waits-for and conditional-blocks hold a bead back too; relates-to and tracks do not', async function () {
      const target = await createBead('Kinds target');
      const held: Record<string, Bead> = {};
      for (const kind of ['waits-for', 'conditional-blocks', 'relates-to', 'tracks']) {
        held[kind] = await createBead(`Kind ${kind}`);
        const out = expectSuccess(await inAlpha(['bead', 'dep', 'add', held[kind].id, target.id, '--type', kind]));
        expect(out).to.deep.equal([`${held[kind].id} depends on ${target.id} (${kind})`]);
      }
      let ready = await readyIds();
      expect(ready).to.not.include(held['waits-for'].id).and.not.include(held['conditional-blocks'].id);
      expect(ready).to.include(held['relates-to'].id).and.include(held.tracks.id);
      expectSuccess(await inAlpha(['bead', 'close', target.id]));
      ready = await readyIds();
      for (const kind of Object.keys(held)) expect(ready, kind).to.include(held[kind].id);
    });

    it('removing the dependency makes the bead ready; only open, undeferred beads are ready', async function () {
      const target = await createBead('Remove target');
      const waiting = await createBead('Remove waiting');
      expectSuccess(await inAlpha(['bead', 'dep', 'add', waiting.id, target.id, '--type', 'waits-for']));
      expect(await readyIds()).to.not.include(waiting.id);
      // Removing a kind it does not have changes nothing (and fails).
      expectFailure(
        await inAlpha(['bead', 'dep', 'remove', waiting.id, target.id, '--type', 'blocks']),
        'bead dep remove',
        /^not_found: /,
      );
      expect(await readyIds()).to.not.include(waiting.id);
      const out = expectSuccess(await inAlpha(['bead', 'dep', 'remove', waiting.id, target.id]));
      expect(out).to.deep.equal([`${waiting.id} no longer depends on ${target.id}`]);
      expect(await readyIds()).to.include(waiting.id);

      const progressing = await createBead('In progress');
      expectSuccess(await inAlpha(['bead', 'update', progressing.id, '--status', 'in_progress']));
      const future = new Date(Date.now() + 3_600_000).toISOString();
      const deferred = await createBead('Deferred', '--defer-until', future);
      const ready = await readyIds();
      expect(ready).to.not.include(progressing.id).and.not.include(deferred.id);
    });

    it('prints a table, oldest first; --json the API body; --assignee filters', async function () {
      const first = await createBead('Ready one', '--assignee', 'ready-agent');
      const second = await createBead('Ready two', '--assignee', 'ready-agent', '--priority', '0');
      const { header, rows } = tableOf(expectSuccess(await inAlpha(['bead', 'ready', '--assignee', 'ready-agent'])));
      // No bead has labels: the column is left out.
      expect(header).to.deep.equal(['ID', 'STATUS', 'TYPE', 'PRI', 'ASSIGNEE', 'TITLE']);
      expect(rows).to.deep.equal([
        [first.id, 'open', 'task', '-', 'ready-agent', 'Ready one'],
        [second.id, 'open', 'task', '0', 'ready-agent', 'Ready two'],
      ]);
      const body = jsonOf<ListBodyBead>(await inAlpha(['bead', 'ready', '--assignee', 'ready-agent', '--json']));
      expect(ids(body.items)).to.deep.equal([first.id, second.id]);
      expect(body.total).to.equal(2);
      expect(expectSuccess(await inAlpha(['bead', 'ready', '--assignee', 'nobody-at-all']))).to.deep.equal([
        'No ready beads.',
      ]);
    });

    it('dep list shows both directions', async function () {
      const target = await createBead('Deps target');
      const waiting = await createBead('Deps waiting');
      expectSuccess(await inAlpha(['bead', 'dep', 'add', waiting.id, target.id]));
      const { header, rows } = tableOf(expectSuccess(await inAlpha(['bead', 'dep', 'list', waiting.id])));
      expect(header).to.deep.equal(['RELATION', 'KIND', 'ID', 'STATUS', 'TITLE']);
      expect(rows).to.deep.equal([['depends on', 'blocks', target.id, 'open', 'Deps target']]);
      expect(tableOf(expectSuccess(await inAlpha(['bead', 'dep', 'list', target.id]))).rows).to.deep.equal([
        ['needed by', 'blocks', waiting.id, 'open', 'Deps waiting'],
      ]);
      const body = jsonOf<BeadDepsResponse>(await inAlpha(['bead', 'dep', 'list', waiting.id, '--json']));
      expect(body.dependencies).to.deep.equal([{ issue_id: waiting.id, depends_on_id: target.id, type: 'blocks' }]);
      expect(ids(body.depends_on)).to.deep.equal([target.id]);
      const lonely = await createBead('Lonely');
      expect(expectSuccess(await inAlpha(['bead', 'dep', 'list', lonely.id]))).to.deep.equal([
        `${lonely.id} has no dependencies and no dependents.`,
      ]);
    });
  });

  describe('ctl bead update, close, reopen, assign, delete', function () {
    it('labels are added and removed, metadata merged (KEY= removes a key)', async function () {
      const bead = await createBead('Labels', '--label', 'a', '--label', 'b', '--meta', 'k=v', '--meta', 'keep=1');
      const out = expectSuccess(
        await inAlpha([
          'bead',
          'update',
          bead.id,
          '--add-label',
          'c',
          '--add-label',
          'a',
          '--remove-label',
          'b',
          '--meta',
          'k=',
          '--meta',
          'n=new',
        ]),
      );
      // It shows the bead as it now is.
      const { header, rows } = tableOf(out);
      expect(header).to.deep.equal(['ID', 'STATUS', 'TYPE', 'LABELS', 'TITLE']);
      expect(rows).to.deep.equal([[bead.id, 'open', 'task', 'a,c', 'Labels']]);
      const after = await showBead(bead.id);
      expect(after.labels).to.deep.equal(['a', 'c']);
      expect(after.metadata).to.deep.equal({ keep: '1', n: 'new' });
      // A metadata value may itself contain `=`.
      expectSuccess(await inAlpha(['bead', 'update', bead.id, '--meta', 'expr=a=b']));
      expect((await showBead(bead.id)).metadata).to.deep.equal({ keep: '1', n: 'new', expr: 'a=b' });
      // The spelling --help shows (--addLabel) works as well, repeated too.
      expectSuccess(
        await inAlpha(['bead', 'update', bead.id, '--addLabel', 'd', '--addLabel=e', '--removeLabel', 'a']),
      );
      expect((await showBead(bead.id)).labels).to.deep.equal(['c', 'd', 'e']);
    });

    it('sets plain fields; --json prints the API body; --parent and --no-parent', async function () {
      const parent = await createBead('New parent');
      const bead = await createBead('Before');
      const body = jsonOf(
        await inAlpha([
          'bead',
          'update',
          bead.id,
          '--title',
          'After',
          '--type',
          'feature',
          '--priority',
          '3',
          '--assignee',
          'builder',
          '--description',
          'Now described',
          '--parent',
          parent.id,
          '--json',
        ]),
      );
      // The updated bead, as `bead show --json` prints it.
      expect(body).to.deep.equal(await showBead(bead.id));
      expect(body).to.include({
        title: 'After',
        issue_type: 'feature',
        priority: 3,
        assignee: 'builder',
        description: 'Now described',
        parent: parent.id,
      });
      expectSuccess(await inAlpha(['bead', 'update', bead.id, '--no-parent']));
      expect(await showBead(bead.id)).to.not.have.property('parent');
    });

    it('update --status closed closes, close is idempotent, reopen reopens', async function () {
      const bead = await createBead('Lifecycle');
      expectSuccess(await inAlpha(['bead', 'update', bead.id, '--status', 'closed']));
      expect((await showBead(bead.id)).status).to.equal('closed');
      expect(expectSuccess(await inAlpha(['bead', 'close', bead.id]))).to.deep.equal([`Closed ${bead.id}`]);
      expect(jsonOf(await inAlpha(['bead', 'close', bead.id, '--json']))).to.deep.equal({ status: 'ok' });
      expect(expectSuccess(await inAlpha(['bead', 'reopen', bead.id]))).to.deep.equal([`Reopened ${bead.id}`]);
      expect((await showBead(bead.id)).status).to.equal('open');
      expectSuccess(await inAlpha(['bead', 'close', bead.id]));
      expect(jsonOf(await inAlpha(['bead', 'reopen', bead.id, '--json']))).to.deep.equal({ status: 'ok' });
    });

    it('assign sets the assignee, --clear removes it', async function () {
      const bead = await createBead('Assign me');
      expect(expectSuccess(await inAlpha(['bead', 'assign', bead.id, 'worker']))).to.deep.equal([
        `Assigned ${bead.id} to worker`,
      ]);
      expect((await showBead(bead.id)).assignee).to.equal('worker');
      expect(jsonOf(await inAlpha(['bead', 'assign', bead.id, 'other', '--json']))).to.deep.equal({
        id: bead.id,
        assignee: 'other',
      });
      expect(expectSuccess(await inAlpha(['bead', 'assign', bead.id, '--clear']))).to.deep.equal([
        `Unassigned ${bead.id}`,
      ]);
      expect(await showBead(bead.id)).to.not.have.property('assignee');
    });

    it('delete removes the bead', async function () {
      const bead = await createBead('Delete me');
      expect(expectSuccess(await inAlpha(['bead', 'delete', bead.id]))).to.deep.equal([`Deleted ${bead.id}`]);
      expectFailure(await inAlpha(['bead', 'show', bead.id]), 'bead show', `not_found: bead not found: ${bead.id}`);
      const again = await createBead('Delete me too');
      expect(jsonOf(await inAlpha(['bead', 'delete', again.id, '--json']))).to.deep.equal({ status: 'ok' });
    });
  });

  describe('ctl mail', function () {
    it('send prints one line; --json the message; inbox lists unread mail as a table', async function () {
      const out = expectSuccess(
        await inAlpha(['mail', 'send', '--to', 'inbox-bob', '--subject', 'Hello Bob', '--body', 'Hi', '--from', 'al']),
      );
      const match = /^Sent (alp-\d+) to inbox-bob: Hello Bob$/.exec(out[0]);
      expect(out).to.have.length(1);
      expect(match, out[0]).to.not.equal(null);
      const first = match![1];
      const second = await sendMail('inbox-bob', 'Second');
      expect(second).to.include({ to: 'inbox-bob', from: 'human', subject: 'Second', body: '', read: false });
      expect(second.thread_id).to.be.a('string');

      const { header, rows } = tableOf(expectSuccess(await inAlpha(['mail', 'inbox', '--agent', 'inbox-bob'])));
      expect(header).to.deep.equal(['ID', 'FROM', 'TO', 'STATE', 'SUBJECT']);
      expect(rows).to.deep.equal([
        [second.id, 'human', 'inbox-bob', 'unread', 'Second'],
        [first, 'al', 'inbox-bob', 'unread', 'Hello Bob'],
      ]);
      const body = jsonOf<MailListBody>(await inAlpha(['mail', 'inbox', '--agent', 'inbox-bob', '--json']));
      expect(ids(body.items)).to.deep.equal([second.id, first]);
      expect(body.total).to.equal(2);
      // Messages are not work: they stay out of bead lists and ready.
      expect(await readyIds()).to.not.include(first);
    });

    it('read marks a message read and prints it; the inbox then shows it only with --all', async function () {
      const message = await sendMail('reader', 'Read me', '--body', 'Line one\nLine two', '--from', 'writer');
      const out = expectSuccess(await inAlpha(['mail', 'read', message.id]));
      const blank = out.indexOf('');
      expect(blank).to.be.greaterThan(0);
      const fields = Object.fromEntries(out.slice(0, blank).map((l) => /^([^:]+):\s+(.*)$/.exec(l)!.slice(1, 3)));
      expect(fields).to.include({ ID: message.id, From: 'writer', To: 'reader', Subject: 'Read me' });
      expect(fields.Thread).to.equal(message.thread_id);
      expect(out.slice(blank + 1)).to.deep.equal(['Line one', 'Line two']);

      expect(expectSuccess(await inAlpha(['mail', 'inbox', '--agent', 'reader']))).to.deep.equal([
        'No unread messages.',
      ]);
      const all = tableOf(expectSuccess(await inAlpha(['mail', 'inbox', '--agent', 'reader', '--all'])));
      expect(all.rows).to.deep.equal([[message.id, 'writer', 'reader', 'read', 'Read me']]);

      const again = jsonOf<Message>(await inAlpha(['mail', 'read', message.id, '--json']));
      expect(again).to.deep.equal({ ...message, read: true });
    });

    it('reply goes to the sender in the same thread, subject Re: … (once), or --subject', async function () {
      const original = await sendMail('replier', 'Plans', '--from', 'asker');
      const out = expectSuccess(await inAlpha(['mail', 'reply', original.id, '--body', 'Sure']));
      const match = /^Sent (alp-\d+) to asker: Re: Plans$/.exec(out[0]);
      expect(match, out[0]).to.not.equal(null);
      const thread = jsonOf<MailListBody>(await inAlpha(['mail', 'thread', original.id, '--json']));
      expect(ids(thread.items)).to.deep.equal([original.id, match![1]]);
      const reply = thread.items[1];
      expect(reply).to.include({
        from: 'replier',
        to: 'asker',
        subject: 'Re: Plans',
        body: 'Sure',
        thread_id: original.thread_id,
        reply_to: original.id,
      });

      const second = jsonOf<Message>(await inAlpha(['mail', 'reply', reply.id, '--json']));
      expect(second).to.include({
        from: 'asker',
        to: 'replier',
        subject: 'Re: Plans',
        thread_id: original.thread_id,
        reply_to: reply.id,
      });
      const third = jsonOf<Message>(
        await inAlpha(['mail', 'reply', second.id, '--subject', 'New topic', '--from', 'boss', '--json']),
      );
      expect(third).to.include({ from: 'boss', to: 'asker', subject: 'New topic', thread_id: original.thread_id });

      // The thread, oldest first, by a message id or by the thread id.
      const table = tableOf(expectSuccess(await inAlpha(['mail', 'thread', third.id])));
      expect(table.header).to.deep.equal(['ID', 'FROM', 'TO', 'STATE', 'SUBJECT']);
      expect(table.rows).to.deep.equal([
        [original.id, 'asker', 'replier', 'unread', 'Plans'],
        [reply.id, 'replier', 'asker', 'unread', 'Re: Plans'],
        [second.id, 'asker', 'replier', 'unread', 'Re: Plans'],
        [third.id, 'boss', 'asker', 'unread', 'New topic'],
      ]);
      const byThread = jsonOf<MailListBody>(await inAlpha(['mail', 'thread', original.thread_id!, '--json']));
      expect(ids(byThread.items)).to.deep.equal([original.id, reply.id, second.id, third.id]);
      expect(byThread.total).to.equal(4);
    });

    it('thread prints a thread of more than a page whole, oldest first', async function () {
      const first = await sendMail('chatty', 'Long');
      const replies: string[] = [];
      for (let i = 0; i < 1005; i += 50) {
        const batch = Array.from({ length: Math.min(50, 1005 - i) }, async () => {
          const { data, error } = await sup.api.POST('/v0/city/{cityName}/mail/{id}/reply', {
            params: { header: CSRF, path: { cityName: 'alpha', id: first.id } },
            body: { body: 'again' },
          });
          if (!data) throw new Error(JSON.stringify(error));
          return data.id;
        });
        replies.push(...(await Promise.all(batch)));
      }
      const byNumber = (a: string, b: string) => Number(a.split('-')[1]) - Number(b.split('-')[1]);
      const thread = jsonOf<MailListBody>(await inAlpha(['mail', 'thread', first.id, '--json']));
      expect(ids(thread.items)).to.deep.equal([first.id, ...replies.sort(byNumber)]);
      expect(thread.total).to.equal(1006);
      expect(expectSuccess(await inAlpha(['mail', 'thread', first.id]))).to.have.length(1007);
    });

    it('archive takes a message out of the inbox (even --all); its thread keeps it', async function () {
      const message = await sendMail('archiver', 'Old news');
      expect(expectSuccess(await inAlpha(['mail', 'archive', message.id]))).to.deep.equal([`Archived ${message.id}`]);
      const inbox = jsonOf<MailListBody>(await inAlpha(['mail', 'inbox', '--agent', 'archiver', '--all', '--json']));
      expect(inbox.items).to.deep.equal([]);
      expect(ids(jsonOf<MailListBody>(await inAlpha(['mail', 'thread', message.id, '--json'])).items)).to.deep.equal([
        message.id,
      ]);
      expect(jsonOf(await inAlpha(['mail', 'archive', message.id, '--json']))).to.deep.equal({ status: 'archived' });
    });
  });

  describe('ctl convoy', function () {
    it('create, list, check, add, remove, close: check completes once every tracked bead is closed, and closes it', async function () {
      const a = await createBead('Convoy item A');
      const b = await createBead('Convoy item B');
      const c = await createBead('Convoy item C');
      const out = expectSuccess(await inAlpha(['convoy', 'create', 'Ship it', '--item', a.id, '--item', b.id]));
      const match = /^Created convoy (alp-\d+): Ship it \(2 items\)$/.exec(out[0]);
      expect(out).to.have.length(1);
      expect(match, out[0]).to.not.equal(null);
      const convoy = match![1];

      expect(expectSuccess(await inAlpha(['convoy', 'check', convoy]))).to.deep.equal([
        `${convoy}: incomplete (0/2 closed)`,
      ]);
      const listed = tableOf(expectSuccess(await inAlpha(['convoy', 'list'])));
      expect(listed.header).to.deep.equal(['ID', 'STATUS', 'CLOSED', 'TITLE']);
      expect(listed.rows).to.deep.include([convoy, 'open', '0/2', 'Ship it']);

      expect(expectSuccess(await inAlpha(['convoy', 'add', convoy, c.id]))).to.deep.equal([
        `Added 1 item to ${convoy}`,
      ]);
      expectSuccess(await inAlpha(['bead', 'close', a.id]));
      expectSuccess(await inAlpha(['bead', 'close', b.id]));
      expect(jsonOf<ConvoyCheckResponse>(await inAlpha(['convoy', 'check', convoy, '--json']))).to.deep.equal({
        convoy_id: convoy,
        total: 3,
        closed: 2,
        complete: false,
      });
      expect(expectSuccess(await inAlpha(['convoy', 'remove', convoy, c.id]))).to.deep.equal([
        `Removed 1 item from ${convoy}`,
      ]);
      // Complete by a removal (no member closed just now): the check closes it, as the reference's does.
      expect(jsonOf<Bead>(await inAlpha(['bead', 'show', convoy, '--json'])).status).to.equal('open');
      expect(jsonOf<ConvoyCheckResponse>(await inAlpha(['convoy', 'check', convoy, '--json']))).to.deep.equal({
        convoy_id: convoy,
        total: 2,
        closed: 2,
        complete: true,
      });
      expect(jsonOf<Bead>(await inAlpha(['bead', 'show', convoy, '--json'])).status).to.equal('closed');
      expect(expectSuccess(await inAlpha(['convoy', 'check', convoy]))).to.deep.equal([
        `${convoy}: complete, closed (2/2 closed)`,
      ]);

      const shown = jsonOf<ConvoyGetResponse>(await inAlpha(['convoy', 'show', convoy, '--json']));
      expect(shown.convoy.id).to.equal(convoy);
      expect(ids(shown.children).sort()).to.deep.equal([a.id, b.id].sort());
      expect(shown.progress).to.deep.equal({ total: 2, closed: 2 });
      const showOut = expectSuccess(await inAlpha(['convoy', 'show', convoy]));
      expect(showOut[0]).to.equal(`${convoy} (closed): Ship it; 2/2 closed`);
      expect(
        tableOf(showOut.slice(1))
          .rows.map((r) => r[0])
          .sort(),
      ).to.deep.equal([a.id, b.id].sort());

      expect(expectSuccess(await inAlpha(['convoy', 'close', convoy]))).to.deep.equal([`Closed convoy ${convoy}`]);
      expect(jsonOf(await inAlpha(['convoy', 'close', convoy, '--json']))).to.deep.equal({ status: 'ok' });
      const open = jsonOf<ListBodyBead>(await inAlpha(['convoy', 'list', '--json']));
      expect(ids(open.items)).to.not.include(convoy);
    });

    it('create --json prints the convoy bead; add/remove take several items; --json their bodies', async function () {
      const items = [await createBead('Multi 1'), await createBead('Multi 2'), await createBead('Multi 3')];
      const convoy = jsonOf<Bead>(await inAlpha(['convoy', 'create', 'Empty start', '--json']));
      expect(convoy).to.include({ title: 'Empty start', status: 'open', issue_type: 'convoy' });
      expect(jsonOf<ConvoyCheckResponse>(await inAlpha(['convoy', 'check', convoy.id, '--json']))).to.deep.equal({
        convoy_id: convoy.id,
        total: 0,
        closed: 0,
        complete: false,
      });
      expect(jsonOf(await inAlpha(['convoy', 'add', convoy.id, ...ids(items), '--json']))).to.deep.equal({
        status: 'ok',
      });
      expect(expectSuccess(await inAlpha(['convoy', 'remove', convoy.id, items[0].id, items[1].id]))).to.deep.equal([
        `Removed 2 items from ${convoy.id}`,
      ]);
      expect(jsonOf<ConvoyCheckResponse>(await inAlpha(['convoy', 'check', convoy.id, '--json'])).total).to.equal(1);
      const list = jsonOf<ListBodyBead>(await inAlpha(['convoy', 'list', '--json']));
      expect(ids(list.items)).to.include(convoy.id);
      expect(list.items.every((b) => b.issue_type === 'convoy')).to.equal(true);
    });

    it('list says so when there are no open convoys', async function () {
      expect(expectSuccess(await ctl(['convoy', 'list', '--city', 'beta']))).to.deep.equal(['No open convoys.']);
    });
  });

  describe("the README's walkthrough", function () {
    it('each command prints what its comment says, with the ids the commands before it produced', async function () {
      // A new city whose prefix is the README's (alp-): its ids start at alp-1.
      await sup.createCity('alps');
      const readme = readFileSync(join(packageRoot, 'README.md'), 'utf8');
      const block = readme.split('the id that the next ones use:\n\n```sh\n')[1]?.split('```')[0];
      expect(block, 'the walkthrough in README.md').to.be.a('string');
      const steps = block
        .split('\n')
        .filter((l) => l.startsWith('ctl '))
        .map((l) => {
          const [command, comment] = l.split(/\s+# /);
          return { command: command.trim(), expected: comment?.startsWith('→ ') ? comment.slice(2) : undefined };
        });
      expect(steps.filter((s) => s.expected).length).to.be.at.least(6);
      for (const { command, expected } of steps) {
        const program = `ctl() { "${process.execPath}" "${ctlEntryPath()}" "$@"; }; ${command}`;
        const result = await execa('bash', ['-c', program], {
          env: { ...sup.env, CTL_CITY: 'alps', NO_COLOR: undefined, FORCE_COLOR: undefined },
          cwd: sup.root,
          reject: false,
        });
        const out = expectSuccess({ code: result.exitCode ?? -1, stdout: result.stdout, stderr: result.stderr });
        if (expected !== undefined) expect(out[0], command).to.equal(expected);
      }
    });
  });

  describe('on a terminal', function () {
    it('a bead table fits the width: the title is cut with …, the id never; the status is coloured', async function () {
      const bead = await createBead(`A title long enough to be cut ${'and so on '.repeat(10)}`, '--label', 'wide');
      expectSuccess(await inAlpha(['bead', 'update', bead.id, '--status', 'in_progress']));
      const result = await runCtlOnTerminal(['bead', 'list', '--label', 'wide', '--city', 'alpha'], {
        env: { ...sup.env, CTL_CITY: undefined },
        cwd: sup.root,
        columns: 50,
      });
      expect(result.code, result.stdout).to.equal(0);
      const [header, row] = result.stdout.split('\n');
      expect(header.split(/\s+/)).to.deep.equal(['ID', 'STATUS', 'TYPE', 'LABELS', 'TITLE']);
      expect(row.startsWith(`${bead.id}  `)).to.equal(true);
      expect(row).to.include('\u001b[33min_progress');
      const plain = stripVTControlCharacters(row);
      expect(plain.length).to.equal(50);
      expect(plain.endsWith('…')).to.equal(true);
      expect(plain).to.include('A title long');
    });

    it('bead create --defer-until 2h: a moment two hours ahead', async function () {
      const before = Date.now();
      const bead = await createBead('Later', '--defer-until', '2h');
      const at = Date.parse(bead.defer_until!);
      expect(at).to.be.within(before + 7_200_000 - 1000, Date.now() + 7_200_000 + 1000);
      expect(await readyIds()).to.not.include(bead.id);
    });
  });

  describe('help', function () {
    const groups: [string[], string[]][] = [
      [['bead'], ['create', 'show', 'list', 'ready', 'update', 'close', 'reopen', 'assign', 'dep', 'delete']],
      [
        ['bead', 'dep'],
        ['add', 'remove', 'list'],
      ],
      [['mail'], ['send', 'inbox', 'check', 'read', 'reply', 'archive', 'thread']],
      [['convoy'], ['create', 'add', 'remove', 'check', 'close', 'list', 'show']],
    ];
    for (const [group, subcommands] of groups) {
      it(`ctl ${group.join(' ')} (bare, and --help) lists its subcommands`, async function () {
        for (const args of [group, [...group, '--help']]) {
          const text = expectSuccess(await ctl(args)).join('\n');
          expect(text).to.include(`ctl ${group.join(' ')}`);
          for (const sub of subcommands) expect(text).to.match(new RegExp(`^\\s+${sub}\\s`, 'm'));
        }
      });
    }
  });

  describe('failures: one stderr line `ctl <command>: …`, exit 1, empty stdout', function () {
    const MISSING = 'alp-99999';
    /** Every command, with arguments that would otherwise reach the API. */
    const COMMANDS: [string, string[]][] = [
      ['bead create', ['Title']],
      ['bead show', [MISSING]],
      ['bead list', []],
      ['bead ready', []],
      ['bead update', [MISSING, '--title', 'x']],
      ['bead close', [MISSING]],
      ['bead reopen', [MISSING]],
      ['bead assign', [MISSING, 'someone']],
      ['bead dep add', [MISSING, 'alp-1']],
      ['bead dep remove', [MISSING, 'alp-1']],
      ['bead dep list', [MISSING]],
      ['bead delete', [MISSING]],
      ['mail send', ['--to', 'x', '--subject', 'y']],
      ['mail inbox', []],
      ['mail read', [MISSING]],
      ['mail reply', [MISSING]],
      ['mail archive', [MISSING]],
      ['mail thread', [MISSING]],
      ['convoy create', ['Title']],
      ['convoy add', [MISSING, 'alp-1']],
      ['convoy remove', [MISSING, 'alp-1']],
      ['convoy check', [MISSING]],
      ['convoy close', [MISSING]],
      ['convoy show', [MISSING]],
      ['convoy list', []],
    ];

    describe('no city in scope (outside every city, no --city, no CTL_CITY)', function () {
      for (const [command, args] of COMMANDS) {
        it(command, async function () {
          expectFailure(await ctl([...command.split(' '), ...args]), command, NO_CITY);
        });
      }

      it('CTL_CITY set but empty is no city either', async function () {
        expectFailure(await ctl(['bead', 'list'], { env: { CTL_CITY: '' } }), 'bead list', NO_CITY);
      });
    });

    describe('unknown flags (refused before anything is sent)', function () {
      for (const [command, args] of COMMANDS) {
        it(command, async function () {
          expectFailure(
            await inAlpha([...command.split(' '), ...args, '--bogus', 'x']),
            command,
            'unknown flag --bogus',
          );
        });
      }

      it('a --no- form of a flag that takes a value', async function () {
        expectFailure(
          await inAlpha(['bead', 'create', 'T', '--no-priority']),
          'bead create',
          'unknown flag --no-priority',
        );
      });
    });

    describe('an id no URL can carry (`.` or `..`), refused before anything is sent', function () {
      const cases: [string, string[]][] = [
        ['bead show', ['..']],
        ['bead close', ['.']],
        ['bead dep add', ['..', 'alp-1']],
        ['mail read', ['..']],
        ['convoy check', ['..']],
      ];
      for (const [command, args] of cases) {
        it(`${command} ${args.join(' ')}`, async function () {
          expectFailure(await inAlpha([...command.split(' '), ...args]), command, /^"\.\.?" is not a valid id$/);
        });
      }
    });

    it('bead dep add --type with an unknown kind names the kinds there are', async function () {
      const a = await createBead('Dep kind A');
      const b = await createBead('Dep kind B');
      expectFailure(
        await inAlpha(['bead', 'dep', 'add', a.id, b.id, '--type', 'bogus']),
        'bead dep add',
        'invalid --type "bogus": expected one of blocks, waits-for, conditional-blocks, tracks, parent-child, relates-to',
      );
      expect(jsonOf<Bead>(await inAlpha(['bead', 'show', a.id, '--json'])).dependencies).to.deep.equal([]);
    });

    describe('unknown bead, message or convoy: the 404 detail', function () {
      const beadMissing = `not_found: bead not found: ${MISSING}`;
      const messageMissing = `not_found: message not found: ${MISSING}`;
      const convoyMissing = `not_found: convoy not found: ${MISSING}`;
      const cases: [string, string[], string][] = [
        ['bead show', [MISSING], beadMissing],
        ['bead update', [MISSING, '--title', 'x'], beadMissing],
        ['bead close', [MISSING], beadMissing],
        ['bead reopen', [MISSING], beadMissing],
        ['bead assign', [MISSING, 'someone'], beadMissing],
        ['bead assign', [MISSING, '--clear'], beadMissing],
        ['bead dep add', [MISSING, 'alp-1'], beadMissing],
        ['bead dep remove', [MISSING, 'alp-1'], beadMissing],
        ['bead dep list', [MISSING], beadMissing],
        ['bead delete', [MISSING], beadMissing],
        ['mail read', [MISSING], messageMissing],
        ['mail reply', [MISSING, '--body', 'x'], messageMissing],
        ['mail archive', [MISSING], messageMissing],
        ['mail thread', [MISSING], `not_found: no thread or message ${MISSING}`],
        ['convoy add', [MISSING, 'alp-1'], convoyMissing],
        ['convoy remove', [MISSING, 'alp-1'], convoyMissing],
        ['convoy check', [MISSING], convoyMissing],
        ['convoy close', [MISSING], convoyMissing],
        ['convoy show', [MISSING], convoyMissing],
      ];
      for (const [command, args, detail] of cases) {
        it(`${command} ${args.join(' ')}`, async function () {
          expectFailure(await inAlpha([...command.split(' '), ...args]), command, detail);
        });
      }

      it('prints exactly the detail the API answers', async function () {
        const detail = await apiDetail(`/v0/city/alpha/bead/${MISSING}`);
        expectFailure(await inAlpha(['bead', 'show', MISSING]), 'bead show', detail);
        const mailDetail = await apiDetail(`/v0/city/alpha/mail/${MISSING}`);
        expectFailure(await inAlpha(['mail', 'read', MISSING]), 'mail read', mailDetail);
        const convoyDetail = await apiDetail(`/v0/city/alpha/convoy/${MISSING}`);
        expectFailure(await inAlpha(['convoy', 'check', MISSING]), 'convoy check', convoyDetail);
      });

      it('a bead of another kind is not a message, nor a convoy', async function () {
        const bead = await createBead('Not a message');
        expectFailure(
          await inAlpha(['mail', 'read', bead.id]),
          'mail read',
          `not_found: message not found: ${bead.id}`,
        );
        expectFailure(
          await inAlpha(['convoy', 'check', bead.id]),
          'convoy check',
          `not_found: convoy not found: ${bead.id}`,
        );
        // Nothing was marked: the bead has no `read` label.
        expect((await showBead(bead.id)).labels ?? []).to.deep.equal([]);
      });

      it('removing a dependency the bead does not have', async function () {
        const a = await createBead('No deps A');
        const b = await createBead('No deps B');
        expectFailure(await inAlpha(['bead', 'dep', 'remove', a.id, b.id]), 'bead dep remove', /^not_found: /);
      });
    });

    describe('invalid input: the 422, naming the flag or argument that carried the field', function () {
      it('bead create: an empty title, a priority out of range, a missing parent', async function () {
        expectFailure(await inAlpha(['bead', 'create', '']), 'bead create', /^invalid TITLE: /);
        const priority = expectFailure(
          await inAlpha(['bead', 'create', 'Too high', '--priority', '9']),
          'bead create',
          /^invalid --priority: /,
        );
        // The API names the field (body.priority); the CLI says its flag, with the API's words.
        const res = await fetch(`${sup.base}/v0/city/alpha/beads`, {
          method: 'POST',
          headers: { ...CSRF, 'content-type': 'application/json' },
          body: JSON.stringify({ title: 'Too high', priority: 9 }),
        });
        expect(res.status).to.equal(422);
        const problem = (await res.json()) as { detail: string; errors: { location: string; message: string }[] };
        expect(problem.errors.map((e) => e.location)).to.deep.equal(['body.priority']);
        expect(priority).to.equal(`invalid --priority: ${problem.errors[0].message}`);
        expectFailure(
          await inAlpha(['bead', 'create', 'Orphan', '--parent', MISSING]),
          'bead create',
          new RegExp(`^invalid --parent: .*${MISSING}`),
        );
      });

      it('bead create: an Idempotency-Key reused with another body', async function () {
        await createBead('Keyed', '--idempotency-key', 'reused-key');
        expectFailure(
          await inAlpha(['bead', 'create', 'Other body', '--idempotency-key', 'reused-key']),
          'bead create',
          'idempotency_mismatch: this Idempotency-Key was used with a different request body',
        );
      });

      it('bead update: an unknown status, an empty title, a priority out of range', async function () {
        const bead = await createBead('Update me badly');
        expectFailure(
          await inAlpha(['bead', 'update', bead.id, '--status', 'bogus']),
          'bead update',
          /^invalid --status: /,
        );
        expectFailure(await inAlpha(['bead', 'update', bead.id, '--title', '']), 'bead update', /^invalid --title: /);
        expectFailure(
          await inAlpha(['bead', 'update', bead.id, '--priority=-1']),
          'bead update',
          /^invalid --priority: /,
        );
        expect(await showBead(bead.id)).to.include({ title: 'Update me badly', status: 'open' });
      });

      it('bead dep add: a cycle, itself, a missing target, an unknown kind', async function () {
        const a = await createBead('Cycle A');
        const b = await createBead('Cycle B');
        expectSuccess(await inAlpha(['bead', 'dep', 'add', a.id, b.id]));
        expectFailure(
          await inAlpha(['bead', 'dep', 'add', b.id, a.id]),
          'bead dep add',
          /^invalid DEPENDS_ON: .*cycle/,
        );
        expectFailure(await inAlpha(['bead', 'dep', 'add', a.id, a.id]), 'bead dep add', /^invalid DEPENDS_ON: /);
        expectFailure(
          await inAlpha(['bead', 'dep', 'add', a.id, MISSING]),
          'bead dep add',
          new RegExp(`^invalid DEPENDS_ON: .*${MISSING}`),
        );
        expectFailure(
          await inAlpha(['bead', 'dep', 'add', a.id, b.id, '--type', 'weird']),
          'bead dep add',
          /^invalid --type "weird": expected one of blocks, /,
        );
        expectFailure(
          await inAlpha(['bead', 'dep', 'remove', a.id, b.id, '--type', 'weird']),
          'bead dep remove',
          /^invalid --type "weird": expected one of blocks, /,
        );
        expect((await showBead(b.id)).dependencies ?? []).to.deep.equal([]);
      });

      it('mail send: an empty recipient or subject', async function () {
        expectFailure(await inAlpha(['mail', 'send', '--to', '', '--subject', 'S']), 'mail send', /^invalid --to: /);
        expectFailure(
          await inAlpha(['mail', 'send', '--to', 'x', '--subject', '']),
          'mail send',
          /^invalid --subject: /,
        );
      });

      it('convoy create, add, remove: an empty title, unknown items, items it does not track', async function () {
        const item = await createBead('Convoy error item');
        expectFailure(await inAlpha(['convoy', 'create', '']), 'convoy create', /^invalid TITLE: /);
        expectFailure(
          await inAlpha(['convoy', 'create', 'Bad', '--item', MISSING]),
          'convoy create',
          `invalid --item: no such bead: ${MISSING}`,
        );
        const convoy = jsonOf<Bead>(await inAlpha(['convoy', 'create', 'Errors', '--json']));
        expectFailure(
          await inAlpha(['convoy', 'add', convoy.id, MISSING]),
          'convoy add',
          `invalid ITEM…: no such bead: ${MISSING}`,
        );
        expectFailure(await inAlpha(['convoy', 'remove', convoy.id, item.id]), 'convoy remove', /^invalid /);
      });

      it('bead reopen of an open bead: the 409 detail', async function () {
        const bead = await createBead('Already open');
        expectFailure(await inAlpha(['bead', 'reopen', bead.id]), 'bead reopen', /^conflict: /);
      });
    });

    describe('arguments the CLI refuses itself', function () {
      const cases: [string, string[], string | RegExp][] = [
        ['bead create', ['T', '--priority', 'high'], 'invalid --priority "high": expected an integer'],
        ['bead create', ['T', '--meta', 'novalue'], 'invalid --meta "novalue": expected KEY=VALUE'],
        ['bead create', ['T', '--meta', '=v'], 'invalid --meta "=v": expected KEY=VALUE'],
        ['bead create', [], 'missing TITLE'],
        ['bead show', [], 'missing ID'],
        ['bead show', ['alp-1', 'alp-2'], 'unexpected argument "alp-2"'],
        ['bead update', ['alp-1'], /^nothing to change/],
        ['bead assign', ['alp-1'], 'pass exactly one of ASSIGNEE and --clear'],
        ['bead assign', ['alp-1', 'x', '--clear'], 'pass exactly one of ASSIGNEE and --clear'],
        ['bead list', ['--limit', '0'], 'invalid --limit 0: must be at least 1'],
        ['bead list', ['--limit', 'many'], 'invalid --limit "many": expected an integer'],
        ['bead ready', ['--limit', '0'], 'invalid --limit 0: must be at least 1'],
        ['mail send', ['--subject', 'S'], 'missing --to'],
        ['mail send', ['--to', 'x'], 'missing --subject'],
        ['mail inbox', ['--limit=-3'], 'invalid --limit -3: must be at least 1'],
        ['convoy add', ['alp-1'], 'missing ITEM…'],
        [
          'bead create',
          ['T', '--defer-until', 'someday'],
          /^invalid --defer-until "someday": expected an RFC 3339 time/,
        ],
        ['bead list', ['--stauts', 'open'], 'unknown flag --stauts; did you mean --status?'],
      ];
      for (const [command, args, message] of cases) {
        it(`${command} ${args.join(' ')}`, async function () {
          expectFailure(await inAlpha([...command.split(' '), ...args]), command, message);
        });
      }

      it('a repeatable flag without a value', async function () {
        expectFailure(
          await ctl(['bead', 'create', 'T', '--city', 'alpha', '--label']),
          'bead create',
          '--label needs a value',
        );
      });

      it('an unknown subcommand names its group', async function () {
        expectFailure(
          await inAlpha(['bead', 'frobnicate']),
          'bead',
          /^unknown command "frobnicate"; see "ctl bead --help"/,
        );
        expectFailure(await inAlpha(['convoy', 'frobnicate']), 'convoy', /^unknown command "frobnicate"/);
      });

      it('an unreachable API', async function () {
        const port = await freePort();
        expectFailure(
          await ctl(['bead', 'list', '--city', 'alpha', '--api', `http://127.0.0.1:${port}`]),
          'bead list',
          `cannot reach the supervisor at http://127.0.0.1:${port} (connection refused); start it with "ctl supervisor start" or pass --api`,
        );
      });
    });
  });
});
