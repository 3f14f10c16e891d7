import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import pino from 'pino';
import { parseAgentTable } from '../../shared/config/city-config.js';
import { ConfigError } from '../../shared/config/config-error.js';
import { idleLimitOf } from '../../shared/config/agent-lifecycle.js';
import type { AgentDefinition } from '../../controller/agent-catalog/agent-catalog.js';
import { AgentStartSteps, fillIn, START_LOG_FILE } from '../../controller/agents/agent-start.js';
import { copyOverlay } from '../../controller/agents/overlay.js';
import { patchAgent } from '../../controller/config/patches.js';
import { CommandRunner } from '../../controller/commands.js';
import type { SessionRecord } from '../../controller/sessions/session-store.js';

const at = (k: string) => `city.toml: agent[0].${k}`;

describe('agent start keys (in-process)', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ctl-agent-start-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  describe('reading them', () => {
    it('reads every key, durations in ms, sleep_after_idle = "off" as never', () => {
      const config = parseAgentTable(
        {
          name: 'w',
          pre_start: ['echo a'],
          session_setup: ['echo b'],
          session_setup_script: 'setup.sh',
          nudge: '  Check your hook.  ',
          wake_mode: 'fresh',
          max_session_age: '5h',
          max_session_age_jitter: '15m',
          drain_timeout: '30s',
          overlay_dir: 'overlay',
          sleep_after_idle: 'off',
        },
        at,
        'city.toml',
      );
      expect(config).to.include({
        nudge: 'Check your hook.',
        wake_mode: 'fresh',
        max_session_age_ms: 5 * 3_600_000,
        max_session_age_jitter_ms: 15 * 60_000,
        drain_timeout_ms: 30_000,
        overlay_dir: 'overlay',
        session_setup_script: 'setup.sh',
        sleep_after_idle_ms: 0,
      });
      expect(config.pre_start).to.deep.equal(['echo a']);
      expect(idleLimitOf(config)).to.equal(undefined);
      expect(idleLimitOf({ sleep_after_idle_ms: 30_000 })).to.equal(30_000);
      expect(idleLimitOf({ sleep_after_idle_ms: 30_000, idle_timeout_ms: 5000 })).to.equal(5000);
    });

    it('refuses a wrong value, naming its key', () => {
      const wrong: [Record<string, unknown>, string][] = [
        [{ pre_start: 'echo a' }, 'city.toml: agent[0].pre_start must be an array of shell commands'],
        [{ wake_mode: 'sometimes' }, 'city.toml: agent[0].wake_mode must be "resume" or "fresh" (got "sometimes")'],
        [
          { max_session_age: 'soon' },
          'city.toml: agent[0].max_session_age must be a duration such as 30s, 5m or 1h30m',
        ],
        [{ sleep_after_idle: 'never' }, 'or "off" (got "never")'],
        [{ nudge: 3 }, 'city.toml: agent[0].nudge must be a string'],
      ];
      for (const [fields, message] of wrong) {
        expect(() => parseAgentTable({ name: 'w', ...fields }, at, 'city.toml'))
          .to.throw(ConfigError)
          .with.property('message')
          .that.includes(message);
      }
    });

    it('a patch sets them too', () => {
      const base = parseAgentTable({ name: 'w' }, at, 'city.toml');
      const patched = patchAgent(base, { max_session_age: '1h', nudge: 'Go.', pre_start: ['true'] }, at);
      expect(patched).to.include({ max_session_age_ms: 3_600_000, nudge: 'Go.' });
      expect(patched.pre_start).to.deep.equal(['true']);
    });
  });

  it('fills in the reference’s placeholders, and names one it does not know', () => {
    expect(fillIn('setup {{.WorkDir}} {{ .Agent }}', { WorkDir: '/w', Agent: 'a' })).to.equal('setup /w a');
    expect(() => fillIn('{{.Nope}}', { WorkDir: '/w' })).to.throw(
      '{{.Nope}} is not a field start commands know (WorkDir)',
    );
  });

  it('copies an overlay additively, never through a link in the work directory leading out', () => {
    const overlay = join(dir, 'overlay');
    const work = join(dir, 'work');
    const outside = join(dir, 'outside');
    mkdirSync(join(overlay, 'conf'), { recursive: true });
    mkdirSync(work);
    mkdirSync(outside);
    writeFileSync(join(overlay, 'a.txt'), 'A');
    writeFileSync(join(overlay, 'conf', 'b.txt'), 'B');
    writeFileSync(join(work, 'a.txt'), 'mine');
    symlinkSync(outside, join(work, 'conf'));
    const copied = copyOverlay(overlay, work);
    expect(readFileSync(join(work, 'a.txt'), 'utf8')).to.equal('mine');
    expect(existsSync(join(outside, 'b.txt'))).to.equal(false);
    expect(copied).to.deep.equal({ copied: 0, skipped: ['conf/: a link in the work directory'] });
    expect(() => copyOverlay(join(dir, 'none'), work)).to.throw(/its overlay_dir .*none is not a directory/);
  });

  it('keeps what pre_start printed in the session’s log, its latest runs when it has grown large', async () => {
    const commands = new CommandRunner();
    mkdirSync(join(dir, 's1'));
    const log = join(dir, 's1', START_LOG_FILE);
    writeFileSync(log, `[old] ${'x'.repeat(100)}\n`.repeat(12_000));
    const steps = new AgentStartSteps({
      cityName: 'c',
      cityRoot: dir,
      sessionsDir: dir,
      env: { PATH: process.env.PATH },
      commands,
      logger: pino({ level: 'silent' }),
      agent: (name) =>
        ({
          name,
          base: name,
          workDir: dir,
          config: {
            name,
            env: {},
            depends_on: [],
            suspended: false,
            source: 'city.toml',
            pre_start: ['echo fresh-output'],
          },
        }) as unknown as AgentDefinition,
      rigRoot: () => undefined,
      timeoutMs: () => 5000,
    });
    const record = { id: 's1', kind: 'agent', template: 'w', session_name: 'w-1', work_dir: dir } as SessionRecord;
    await steps.beforeProgram({ record, saveFields: () => {}, recordLifecycle: async () => {} }, dir);
    const text = readFileSync(log, 'utf8');
    expect(text.length).to.be.below(600 * 1024);
    expect(text.startsWith('[old] ')).to.equal(true);
    expect(text).to.match(/pre_start\[0\]: echo fresh-output\nfresh-output\n→ ok \(\d+ ms\)\n$/);
    commands.stop();
  });

  it('wake_mode = "fresh" forgets the conversation before each start; "resume" keeps it', async () => {
    const commands = new CommandRunner();
    const agents: Record<string, Partial<AgentDefinition['config']>> = { fresh: { wake_mode: 'fresh' }, kept: {} };
    const steps = new AgentStartSteps({
      cityName: 'c',
      cityRoot: dir,
      sessionsDir: dir,
      env: {},
      commands,
      logger: pino({ level: 'silent' }),
      agent: (name) =>
        ({
          name,
          base: name,
          workDir: dir,
          config: { name, env: {}, depends_on: [], suspended: false, source: 'city.toml', ...agents[name] },
        }) as AgentDefinition,
      rigRoot: () => undefined,
      timeoutMs: () => 1000,
    });
    const starting = (template: string) => {
      const record = { id: 's1', kind: 'agent', template, session_name: `${template}-1`, provider_session_key: 'k1' };
      return {
        record: record as SessionRecord,
        saveFields: (changed: Partial<SessionRecord>) => Object.assign(record, changed),
        recordLifecycle: async () => {},
      };
    };
    const fresh = starting('fresh');
    await steps.beforeProgram(fresh, dir);
    expect(fresh.record.provider_session_key).to.equal(undefined);
    const kept = starting('kept');
    await steps.beforeProgram(kept, dir);
    expect(kept.record.provider_session_key).to.equal('k1');
    commands.stop();
  });
});
