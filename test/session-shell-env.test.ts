import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { resolveProviders } from '../controller/providers/resolve.js';
import { sessionEnvironment, writeHeldBead } from '../controller/sessions/session-environment.js';
import type { SessionRecord } from '../controller/sessions/session-store.js';

const record: SessionRecord = {
  id: 'alp-7',
  title: 'worker',
  state: 'active',
  template: 'worker',
  kind: 'agent',
  provider: 'claude',
  session_name: 'worker-7',
  work_dir: '/tmp',
  created_at: '2026-11-25T00:00:00Z',
};

/** The shell start-up file a session's programs get (BASH_ENV), run by a real bash as an agent's tool starts one. */
describe("a session's shells read the bead it holds now (BASH_ENV, real bash)", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ctl-shell-env-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('every bash runs the BASH_ENV it would have had, then reads the bead held at that moment', () => {
    const theirs = join(dir, 'theirs.sh');
    writeFileSync(theirs, 'THEIRS=yes; CTL_BEAD=theirs-1\n');
    // As a session's program starts it: its stdin a socket (Node's pipes), SHLVL and BASH_ENV from the session's
    // environment, a CTL_BEAD of its start that has gone stale since.
    const place = { cityName: 'a', cityRoot: dir, env: { PATH: process.env.PATH, BASH_ENV: theirs } };
    const env: NodeJS.ProcessEnv = {
      ...sessionEnvironment(place, record, resolveProviders({}, {}, 'city.toml').get('claude')!, { dir }),
      CTL_BEAD: 'stale-1',
    };
    expect(env.BASH_ENV).to.equal(join(dir, 'shell-env.sh'));
    const run = () =>
      execFileSync('bash', ['-c', 'echo "${CTL_BEAD-unset} $THEIRS"'], { env, encoding: 'utf8' }).trim();
    writeHeldBead(dir, 'alp-3');
    expect(run()).to.equal('alp-3 yes');
    writeHeldBead(dir, undefined);
    expect(run()).to.equal('unset yes');
  });
});
