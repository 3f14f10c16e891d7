import { expect } from 'chai';
import { parse } from 'smol-toml';
import { setProviderTable } from '../../controller/config/provider-table-edit.js';

// Writing one `[providers.<name>]` table of a hand-written city.toml: the table as asked, every other byte kept.

const PERSON = `# City (by hand)

[workspace]
provider = "claude"   # the default

# Providers
[providers.claude]
base = "builtin:claude"
# keep the model
option_defaults = { model = "opus" }

# mine is mine
[providers.mine]  # header comment
command = "echo"  # trailing
args = ["a", "b"]

[providers.mine.env]
A = "1"

# agents
[[agent]]
name = "ann"
provider = "mine"
`;

/** Parsed as the controller parses it, as plain objects. */
function read(text: string): Record<string, unknown> {
  return JSON.parse(JSON.stringify(parse(text))) as Record<string, unknown>;
}

describe('city.toml edits of one provider table', () => {
  it('adds a new table after the last providers table, and nothing else', () => {
    const out = setProviderTable(PERSON, 'new', { command: '/x/agent.sh', args: ['-q'], env: { B: '2' } });
    // New arrays and tables as toml-patch writes them (the TOML specification's own style).
    const block = '[providers.new]\ncommand = "/x/agent.sh"\nargs = [ "-q" ]\nenv = { B = "2" }\n';
    const at = PERSON.indexOf('# agents');
    expect(out).to.equal(PERSON.slice(0, at) + block + '\n' + PERSON.slice(at));
    expect((read(out).providers as Record<string, unknown>).new).to.deep.equal({
      command: '/x/agent.sh',
      args: ['-q'],
      env: { B: '2' },
    });
  });

  it('changes a table in place: its comments, its sub-tables, the comment after it all kept', () => {
    const out = setProviderTable(PERSON, 'mine', { command: 'echo', args: ['c'], env: { A: '1', C: '3' } });
    expect(out).to.equal(
      PERSON.replace('args = ["a", "b"]', 'args = ["c"]').replace('A = "1"\n', 'A = "1"\nC = "3"\n'),
    );
  });

  it('removes a table with its sub-tables; a comment above it is the person’s and stays', () => {
    const out = setProviderTable(PERSON, 'mine', undefined);
    const start = PERSON.indexOf('[providers.mine]');
    const end = PERSON.indexOf('# agents');
    expect(out).to.equal(PERSON.slice(0, start) + '\n' + PERSON.slice(end));
    const claude = setProviderTable(PERSON, 'claude', undefined);
    const table =
      '[providers.claude]\nbase = "builtin:claude"\n# keep the model\noption_defaults = { model = "opus" }\n';
    expect(claude).to.equal(PERSON.replace(table, ''));
  });

  it('removing a table between blank lines leaves one blank line', () => {
    const text = '[workspace]\n\n[providers.a]\ncommand = "a"\n\n[providers.b]\ncommand = "b"\n';
    expect(setProviderTable(text, 'a', undefined)).to.equal('[workspace]\n\n[providers.b]\ncommand = "b"\n');
    expect(setProviderTable(text, 'b', undefined)).to.equal('[workspace]\n\n[providers.a]\ncommand = "a"\n');
  });

  it('appends the first table at the end of a file without one (with or without a final newline)', () => {
    expect(setProviderTable('[workspace]\nstart_command = "x"', 'p', { command: 'y' })).to.equal(
      '[workspace]\nstart_command = "x"\n\n[providers.p]\ncommand = "y"\n',
    );
    expect(setProviderTable('[workspace]\n\n', 'p', { command: 'y' })).to.equal(
      '[workspace]\n\n[providers.p]\ncommand = "y"\n',
    );
    expect(setProviderTable('', 'p', { command: 'y' })).to.equal('[providers.p]\ncommand = "y"\n');
  });

  it('quotes a name TOML cannot write bare, and keeps CRLF line ends', () => {
    const dotted = setProviderTable('[workspace]\n', 'a.b', { command: 'x' });
    expect(dotted).to.equal('[workspace]\n\n[providers."a.b"]\ncommand = "x"\n');
    expect(read(dotted).providers).to.deep.equal({ 'a.b': { command: 'x' } });
    const crlf = '[workspace]\r\n\r\n[providers.m]\r\ncommand = "y"\r\n\r\n[[agent]]\r\nname = "a"\r\n';
    expect(setProviderTable(crlf, 'm', { command: 'y', quiet_ms: 20 })).to.equal(
      crlf.replace('command = "y"\r\n', 'command = "y"\r\nquiet_ms = 20\r\n'),
    );
  });

  it('edits providers written in other layouts through the whole document, and checks the result', () => {
    const inline = '[workspace]\n[providers]\nq = { command = "y" }  # q\n\n[[agent]]\nname = "a"\n';
    const changed = setProviderTable(inline, 'q', { command: 'y', args: ['1'] });
    expect(read(changed).providers).to.deep.equal({ q: { command: 'y', args: ['1'] } });
    expect(changed).to.include('\n[[agent]]\nname = "a"\n');
    const added = setProviderTable(inline, 'p', { command: 'x' });
    expect(read(added).providers).to.deep.equal({ q: { command: 'y' }, p: { command: 'x' } });
    const root = 'providers = { q = { command = "y" } }\n\n[workspace]\n';
    const rootAdded = setProviderTable(root, 'p', { command: 'x' });
    expect(read(rootAdded)).to.deep.equal({ providers: { q: { command: 'y' }, p: { command: 'x' } }, workspace: {} });
    expect(read(setProviderTable(root, 'q', undefined))).to.deep.equal({ providers: {}, workspace: {} });
  });

  it('a table split around another table is edited through the whole document too', () => {
    const split = '[providers.m]\ncommand = "y"\n\n[workspace]\n\n[providers.m.env]\nA = "1"\n';
    const out = setProviderTable(split, 'm', { command: 'z', env: { A: '1' } });
    expect(read(out)).to.deep.equal({ providers: { m: { command: 'z', env: { A: '1' } } }, workspace: {} });
  });
});
