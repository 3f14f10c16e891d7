import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import { parseCityConfig } from '../../shared/config/city-config.js';
import { composeConfig } from '../../controller/config/compose.js';
import { parseHostTables, parseSshAddress } from '../../controller/hosts/host-config.js';

// `[[host]]` tables (of city.toml and of packs) and agents' `hosts = [...]`: what is taken, and each mistake named
// by its key, the rest of the city left running.
describe('host configuration', function () {
  let root: string;
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  };
  beforeEach(function () {
    root = mkdtempSync(join(tmpdir(), 'ctl-hosts-'));
    write('keys/id', 'not really a key, but readable\n');
  });
  afterEach(function () {
    rmSync(root, { recursive: true, force: true });
  });
  const compose = (cityToml: string) =>
    composeConfig(root, parseCityConfig(cityToml, 'city.toml'), { cacheRoot: join(root, 'cache') });
  const hostTable = (fields: Record<string, unknown>) => [{ name: 'h1', address: 'ssh://u@example.net', ...fields }];

  it('parses ssh://user@host[:port], and names what else an address is', function () {
    expect(parseSshAddress('ssh://root@10.1.2.3:2222')).to.deep.equal({
      user: 'root',
      hostname: '10.1.2.3',
      port: 2222,
    });
    expect(parseSshAddress('ssh://me@build.example')).to.deep.equal({
      user: 'me',
      hostname: 'build.example',
      port: 22,
    });
    expect(parseSshAddress('ssh://me@[fd00::1]:22')).to.deep.equal({ user: 'me', hostname: 'fd00::1', port: 22 });
    expect(parseSshAddress('me@build.example')).to.match(/^must be ssh:\/\/user@host\[:port\]/);
    expect(parseSshAddress('https://me@build.example')).to.match(/^must be ssh:\/\//);
    expect(parseSshAddress('ssh://build.example')).to.match(/^names no user/);
    expect(parseSshAddress('ssh://me:pw@build.example')).to.match(/never a password/);
    expect(parseSshAddress('ssh://me@build.example/srv')).to.match(/no path or query/);
    expect(parseSshAddress('ssh://-oProxyCommand=x@h')).to.match(/must not start a user or host with "-"/);
  });

  it('takes a host with its defaults, an identity file resolved against the city', function () {
    const { hosts, problems } = parseHostTables(hostTable({ identity_file: 'keys/id' }), 'city.toml', root);
    expect(problems).to.deep.equal([]);
    expect(hosts).to.deep.equal([
      {
        name: 'h1',
        address: 'ssh://u@example.net',
        user: 'u',
        hostname: 'example.net',
        port: 22,
        identity_file: join(root, 'keys/id'),
        slots: 1,
        labels: [],
        work_root: '~/.ctl-work',
        source: 'city.toml',
      },
    ]);
  });

  it('names the key of each mistake and leaves that host out', function () {
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ address: 'build.example' }, 'host[0].address', /must be ssh:\/\/user@host\[:port\]/],
      [{ name: undefined }, 'host[0].name', /is required/],
      [{ name: 'local' }, 'host[0].name', /this machine's name/],
      [{ name: 'a b' }, 'host[0].name', /must match/],
      [{ slots: 0 }, 'host[0].slots', /must be an integer, 1 or more \(got 0\)/],
      [{ slots: 1.5 }, 'host[0].slots', /must be an integer, 1 or more/],
      [{ labels: 'gpu' }, 'host[0].labels', /must be an array of words/],
      [{ labels: ['local'] }, 'host[0].labels', /must not be "local"/],
      [{ work_root: 'work' }, 'host[0].work_root', /must be absolute on the host, or under its home/],
      [{ identity_file: 'keys/missing' }, 'host[0].identity_file', /keys\/missing does not exist/],
      [{ identity_file: 'keys' }, 'host[0].identity_file', /keys is not a file/],
      [{ known_hosts: '/nonexistent/known_hosts' }, 'host[0].known_hosts', /does not exist/],
    ];
    for (const [fields, key, message] of cases) {
      const { hosts, problems } = parseHostTables(hostTable(fields), 'city.toml', root);
      expect(hosts, key).to.deep.equal([]);
      expect(problems.map((p) => p.key)).to.deep.equal([key]);
      expect(problems[0].message).to.match(message);
      expect(problems[0].message.startsWith(`city.toml: ${key} `), problems[0].message).to.equal(true);
    }
  });

  it('names an identity file the controller cannot read', function () {
    // As root every file is readable: the refusal of access itself cannot be made here.
    if (process.getuid?.() === 0) {
      this.test!.title += ' (skipped: as root every file is readable)';
      this.skip();
    }
    chmodSync(join(root, 'keys/id'), 0o000);
    const { problems } = parseHostTables(hostTable({ identity_file: 'keys/id' }), 'city.toml', root);
    expect(problems[0].message).to.match(/is not readable by the controller/);
  });

  it('composes the hosts of city.toml and its packs; two of one name is a problem, the first kept', function () {
    write(
      'packs/farm/pack.toml',
      '[pack]\nname = "farm"\n[[host]]\nname = "b1"\naddress = "ssh://ci@b1.example"\nslots = 4\nlabels = ["build"]\n[[host]]\nname = "h1"\naddress = "ssh://x@elsewhere"\n',
    );
    const composed = compose(
      '[imports.farm]\nsource = "packs/farm"\n[[host]]\nname = "h1"\naddress = "ssh://u@h1.example:2200"\nlabels = ["gpu"]\n',
    );
    expect(composed.hosts.map((h) => [h.name, h.hostname, h.port, h.slots, h.labels, h.source])).to.deep.equal([
      ['h1', 'h1.example', 2200, 1, ['gpu'], 'city.toml'],
      ['b1', 'b1.example', 22, 4, ['build'], 'pack:farm/pack.toml'],
    ]);
    expect(composed.problems.map((p) => p.message)).to.deep.equal([
      'pack:farm/pack.toml: two hosts are named h1 (the first in city.toml): this one is left out',
    ]);
  });

  it('an agent’s hosts names hosts, labels or local; anything else is named', function () {
    const composed = compose(
      '[[host]]\nname = "h1"\naddress = "ssh://u@h1.example"\nlabels = ["gpu"]\n' +
        '[[agent]]\nname = "ok"\nhosts = ["local", "h1", "gpu"]\n' +
        '[[agent]]\nname = "bad"\nhosts = ["h2", "gpu", "fast"]\n',
    );
    expect(composed.agents.find((a) => a.name === 'ok')!.hosts).to.deep.equal(['local', 'h1', 'gpu']);
    expect(composed.problems).to.deep.equal([
      {
        file: 'city.toml',
        key: 'hosts',
        message:
          'agent bad: hosts names h2, fast, which no [[host]] is named or labelled (the city has local, h1, gpu)',
      },
    ]);
  });

  it('hosts is given by [agent_defaults] and by a patch, and must be a list of names', function () {
    const composed = compose(
      '[[host]]\nname = "h1"\naddress = "ssh://u@h1.example"\n[agent_defaults]\nhosts = ["h1"]\n' +
        '[[agent]]\nname = "a"\n[[agent]]\nname = "b"\n[[patches.agent]]\nname = "b"\nhosts = ["local"]\n',
    );
    expect(composed.problems).to.deep.equal([]);
    expect(composed.agents.map((a) => [a.name, a.hosts])).to.deep.equal([
      ['a', ['h1']],
      ['b', ['local']],
    ]);
    expect(() => parseCityConfig('[[agent]]\nname = "a"\nhosts = "h1"\n', 'city.toml')).to.throw(
      'city.toml: agent[0].hosts must be an array of non-empty strings',
    );
  });

  it('an unknown key of [[host]] is named; [session] provider = "k8s" stays a warning', function () {
    const composed = compose(
      '[session]\nprovider = "k8s"\n[[host]]\nname = "h1"\naddress = "ssh://u@h1.example"\nslot = 2\n',
    );
    expect(composed.unknownKeys.map((p) => [p.key, p.message])).to.deep.equal([
      ['host[0].slot', 'unknown key `slot` in [[host]] (host h1) — did you mean `slots`?'],
    ]);
    const k8s = composed.unsupported.find((w) => w.key === 'session.provider');
    expect(k8s?.message).to.match(
      /`\[session\] provider = "k8s"` — .*Kubernetes is not built until a cluster can be tested here/,
    );
  });
});
