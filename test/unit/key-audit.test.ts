import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { parse } from 'smol-toml';
import { parseCityConfig } from '../../shared/config/city-config.js';
import { composeConfig } from '../../controller/config/compose.js';
import { AGENT_PATCH_KEYS } from '../../controller/config/patches.js';
import { auditKeys, nearest, type KeyFinding, type TableSpec } from '../../controller/config-schema/key-audit.js';
import { editDistance } from '../../shared/text/edit-distance.js';
import { AGENT_TOML, CITY_TOML, FORMULA, PACK_TOML } from '../../controller/config-schema/reference-keys.js';
import { parseFormula } from '../../controller/formulas/formula-file.js';
import { parseProviderSpec } from '../../controller/providers/resolve.js';
import { readPackFile } from '../../controller/packs/pack-file.js';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'reference-config');
const fixture = (name: string) => parse(readFileSync(join(FIXTURES, name), 'utf8')) as Record<string, unknown>;

/**
 * Every key of `doc` that the spec does not act on, as dotted paths — found independently of the audit, so that a
 * key the audit skipped silently fails the test.
 */
function notActedOn(doc: Record<string, unknown>, spec: TableSpec, path = ''): string[] {
  if (spec.open) return [];
  const out: string[] = [];
  for (const [key, value] of Object.entries(doc)) {
    const at = path ? `${path}.${key}` : key;
    const known = spec.keys[key];
    if (known === undefined) out.push(at);
    else if (known === true) continue;
    else if ('each' in known) {
      for (const [name, inner] of Object.entries(value as Record<string, unknown>)) {
        out.push(...notActedOn(inner as Record<string, unknown>, known.each, `${at}.${name}`));
      }
    } else if (Array.isArray(value)) {
      value.forEach((inner, i) => out.push(...notActedOn(inner as Record<string, unknown>, known, `${at}[${i}]`)));
    } else out.push(...notActedOn(value as Record<string, unknown>, known, at));
  }
  return out;
}

function expectEachNamed(doc: Record<string, unknown>, spec: TableSpec, findings: KeyFinding[]) {
  const named = new Set(findings.map((f) => f.key));
  const missing = notActedOn(doc, spec).filter((key) => !named.has(key));
  expect(missing, 'keys neither acted on nor named').to.deep.equal([]);
  expect(
    findings.filter((f) => f.kind === 'unknown').map((f) => f.message),
    'a reference key is never "unknown"',
  ).to.deep.equal([]);
}

describe('the key audit against every table of the reference’s configuration', function () {
  it('city.toml: each key is acted on or named as not supported, with its file and key', function () {
    const doc = fixture('city.toml');
    const findings = auditKeys(doc, CITY_TOML, 'city.toml');
    expectEachNamed(doc, CITY_TOML, findings);
    expect(findings.length).to.be.greaterThan(40);
    const provider = findings.find((f) => f.key === 'session.provider');
    expect(provider?.file).to.equal('city.toml');
    expect(provider?.message).to.match(/^not supported: `\[session\] provider = "k8s"` — sessions run on this machine/);
    expect(findings.find((f) => f.key === 'session.k8s')?.message).to.match(/^not supported: `\[session\.k8s\]`/);
    expect(findings.find((f) => f.key === 'workspace.default_rig_includes')?.message).to.match(
      /`\[workspace\] default_rig_includes = \["x"\]` — a rig’s default packs are \[defaults\.rig\.imports/,
    );
    // Acted on now: includes (packs taken in whole), global_fragments (prompt fragments), shutdown_timeout.
    for (const key of ['workspace.includes', 'workspace.global_fragments', 'daemon.shutdown_timeout'])
      expect(
        findings.find((f) => f.key === key),
        key,
      ).to.equal(undefined);
    expect(findings.find((f) => f.key === 'named_session')?.message).to.match(/`\[\[named_session\]\]`/);
    expect(findings.find((f) => f.key === 'providers.x.supports_acp')?.message).to.match(
      /^not supported: `\[providers\.x\] supports_acp = true` — a provider speaks ACP when protocol = "acp"$/,
    );
    // The provider's parser passes over the reference's settings (the audit names them) but still refuses a typo.
    expect(parseProviderSpec({ command: 'claude', supports_acp: true }, 'city.toml: providers.x')).to.deep.equal({
      command: 'claude',
    });
    expect(() => parseProviderSpec({ comand: 'claude' }, 'city.toml: providers.x')).to.throw(/not a provider setting/);
    expect(findings.find((f) => f.key === 'agent[0].namepool')?.message).to.match(
      /`\[\[agent\]\] namepool = "x"` \(agent x\)/,
    );
    // The lifecycle keys ctl acts on are no longer named.
    for (const key of ['nudge', 'pre_start', 'session_setup', 'wake_mode', 'max_session_age', 'drain_timeout']) {
      expect(findings.find((f) => f.key === `agent[0].${key}`)?.message, key).to.equal(undefined);
    }
  });

  it('pack.toml: each table is acted on or named; [global] named, not refused', function () {
    const doc = fixture('pack.toml');
    const findings = auditKeys(doc, PACK_TOML, 'pack:x/pack.toml');
    expectEachNamed(doc, PACK_TOML, findings);
    for (const key of ['global', 'formulas', 'agent_defaults.model']) {
      expect(findings.find((f) => f.key === key)?.message, key).to.match(/^not supported: /);
    }
    // Acted on: a pack's agent patches and commands, its description, its includes, an import's export and
    // transitive, its [agent_defaults] (what the reference gives its agents from it).
    for (const key of [
      'patches',
      'commands',
      'pack.description',
      'pack.includes',
      'imports.x.export',
      'imports.x.transitive',
      'agent_defaults',
    ]) {
      expect(
        findings.find((f) => f.key === key),
        key,
      ).to.equal(undefined);
    }
  });

  it('agent.toml: each key is acted on or named', function () {
    const doc = fixture('agent.toml');
    const findings = auditKeys(doc, AGENT_TOML, 'agents/x/agent.toml');
    expectEachNamed(doc, AGENT_TOML, findings);
    expect(findings.find((f) => f.key === 'skills')?.message).to.match(/^not supported: `skills = \["x"\]`/);
  });

  it('a formula: each key is acted on or named; it parses with warnings, not errors, for them', function () {
    const doc = fixture('formula.toml');
    const findings = auditKeys(doc, FORMULA, 'formulas/formula.toml');
    expectEachNamed(doc, FORMULA, findings);
    expect(findings.map((f) => f.key)).to.include.members([
      'compose.aspects',
      'steps[0].ralph',
      'steps[0].children[0].notes',
    ]);
    const parsed = parseFormula(
      readFileSync(join(FIXTURES, 'formula.toml'), 'utf8'),
      'formulas/formula.toml',
      'formula',
    );
    expect(parsed.warnings.some((w) => /ralph/.test(w))).to.equal(true);
    expect(parsed.errors.filter((e) => /unknown key/.test(e))).to.deep.equal([]);
  });

  it('an unknown key of our own tables is an error with the nearest known key suggested', function () {
    const doc = parse('[workspace]\nprovder = "echo"\n[[agent]]\nname = "a"\npromt = "hi"\n[sesion]\nprovider = "x"\n');
    const findings = auditKeys(doc, CITY_TOML, 'city.toml');
    expect(findings.map((f) => [f.kind, f.key, f.message])).to.deep.equal([
      ['unknown', 'workspace.provder', 'unknown key `provder` in [workspace] — did you mean `provider`?'],
      ['unknown', 'agent[0].promt', 'unknown key `promt` in [[agent]] (agent a) — did you mean `prompt`?'],
      ['unknown', 'sesion', 'unknown table `sesion` in city.toml — did you mean `session`?'],
    ]);
    const far = auditKeys(parse('[beads]\nzzzzzz = 1\n'), CITY_TOML, 'city.toml');
    expect(far[0]?.message).to.equal('unknown key `zzzzzz` in [beads] (known here: backend, provider)');
  });

  it('an unknown pack table is a warning, never a refusal of the pack', function () {
    const dir = mkdtempSync(join(tmpdir(), 'ctl-pack-'));
    try {
      writeFileSync(join(dir, 'pack.toml'), '[pack]\nname = "p"\n[frobnicate]\nx = 1\n[[agent]]\nname = "a"\n');
      const pack = readPackFile(dir, 'pack:p/pack.toml');
      expect(pack.agents.map((a) => a.name)).to.deep.equal(['a']);
      expect(pack.findings.map((f) => [f.kind, f.key])).to.deep.equal([['unsupported', 'frobnicate']]);
      expect(pack.findings[0].message).to.match(/^unknown table `frobnicate` in pack:p\/pack\.toml .*: ignored$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('compose: unsupported keys are warnings, unknown keys problems, each with its file, once', function () {
    const root = mkdtempSync(join(tmpdir(), 'ctl-city-'));
    try {
      mkdirSync(join(root, 'packs', 'gs', 'agents', 'mayor'), { recursive: true });
      writeFileSync(
        join(root, 'packs', 'gs', 'pack.toml'),
        '[pack]\nname = "gs"\nschema = 2\n[global]\nsession_live = ["x"]\n[[named_session]]\ntemplate = "mayor"\n',
      );
      writeFileSync(join(root, 'packs', 'gs', 'agents', 'mayor', 'agent.toml'), 'namepool = "go"\nprovder = "echo"\n');
      const text =
        '[workspace]\nname = "c"\n[session]\nprovider = "k8s"\n[imports.gs]\nsource = "./packs/gs"\n[agent_defaults]\nmodel = "opus"\n' +
        '[[patches.agent]]\nname = "gs.mayor"\nsuspended = true\nsession_live_append = ["make"]\n';
      const composed = composeConfig(root, parseCityConfig(text, 'city.toml'), { cacheRoot: join(root, 'cache') });
      expect(composed.agents.map((a) => [a.name, a.suspended])).to.deep.equal([['gs.mayor', true]]);
      expect(composed.unsupported.map((w) => `${w.file} ${w.key}`)).to.have.members([
        'city.toml session.provider',
        'city.toml agent_defaults.model',
        'city.toml patches.agent[0].session_live_append',
        'pack:gs/pack.toml global',
        'pack:gs/agents/mayor/agent.toml namepool',
      ]);
      expect(composed.unknownKeys.map((w) => `${w.file} ${w.key}`)).to.deep.equal([
        'pack:gs/agents/mayor/agent.toml provder',
      ]);
      expect(composed.problems.map((p) => p.message)).to.include(
        'unknown key `provder` in pack:gs/agents/mayor/agent.toml — did you mean `provider`?',
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('the priming settings of a provider are acted on: no finding', function () {
    const doc = {
      providers: { mine: { base: 'builtin:claude', system_prompt_args: ['-x', '{prompt_file}'], settings_args: [] } },
    };
    expect(auditKeys(doc, CITY_TOML, 'city.toml')).to.deep.equal([]);
  });

  it('every key an agent patch may set is one an agent table is audited as acting on', function () {
    // Whoever teaches agents a key teaches patches it too; the audit must then not call it unknown.
    expect(AGENT_PATCH_KEYS.filter((k) => AGENT_TOML.keys[k] === undefined)).to.deep.equal([]);
  });

  it('edit distance counts a swap as one edit; nearest suggests only near keys', function () {
    expect(editDistance('promt', 'prompt')).to.equal(1);
    expect(editDistance('porvider', 'provider')).to.equal(1);
    expect(nearest('scoep', ['scope', 'dir'])).to.equal('scope');
    expect(nearest('xyz', ['scope', 'dir'])).to.equal(undefined);
  });
});
