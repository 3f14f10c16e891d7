import { aliasesOf } from '../_args.js';
import { command, withCommands } from '../_command.js';
import { namesCommand } from './completion-names.js';
import { CliError } from '../_errors.js';
import { GLOBAL_FLAGS } from '../_flags.js';
import { flagsOf, metaOf, subCommandsOf, walkTree } from '../_tree.js';
import type { Flags, NameKind } from '../_types.js';

// Shell completion scripts, generated from the command tree itself: every command, subcommand and flag that
// `ctl` knows, nothing written twice. Each script finds the command typed so far (the words that name
// commands, skipping flags and the values of flags that take one), then offers its subcommands or, after a
// `-`, its flags; after a flag that takes a value it leaves completion to the shell (files).

interface Node {
  /** The words naming it, space-separated (`''` for ctl itself). */
  path: string;
  commands: { name: string; description: string }[];
  flags: { spelling: string; description: string; valued: boolean; kind?: NameKind }[];
  /** What each of its positional arguments names, in order, where completion can offer names. */
  positionals: (NameKind | undefined)[];
}

function flagList(flags: Flags): Node['flags'] {
  const out: Node['flags'] = [];
  for (const [name, flag] of Object.entries(flags)) {
    if (flag.type === 'positional') continue;
    for (const spelling of [`--${name}`, ...aliasesOf(flag)]) {
      out.push({
        spelling,
        description: flag.description ?? '',
        valued: flag.type !== 'boolean',
        ...(flag.complete ? { kind: flag.complete } : {}),
      });
    }
  }
  return out;
}

async function commandTree(): Promise<Node[]> {
  const nodes: Node[] = [];
  await walkTree(async (cmd, path) => {
    const commands = await Promise.all(
      Object.entries(await subCommandsOf(cmd)).map(async ([name, sub]) => ({
        name,
        description: (await metaOf(sub)).description ?? '',
      })),
    );
    const own = path.length === 0 ? GLOBAL_FLAGS : await flagsOf(cmd);
    const flags = flagList(own);
    flags.push({ spelling: '--help', description: 'Show how to use it', valued: false });
    const positionals = Object.values(own)
      .filter((f) => f.type === 'positional')
      .map((f) => f.complete);
    nodes.push({ path: path.join(' '), commands, flags, positionals });
  });
  return nodes;
}

/** A shell word, single-quoted. */
function q(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * Shell functions answering, for a command path, its subcommands, its flags and its flags that take a value;
 * what a flag's value names (`--city`: cities), what a command's Nth positional names, and those names, asked
 * of the running supervisor (quickly, and nothing at all when it is down).
 */
function caseFunctions(nodes: Node[], name: (what: string) => string): string {
  const fn = (what: string, pick: (n: Node) => string[]) =>
    `${name(what)}() {\n  case "$1" in\n${nodes
      .filter((n) => pick(n).length > 0)
      .map((n) => `    ${q(n.path)}) echo ${q(pick(n).join(' '))} ;;\n`)
      .join('')}  esac\n}\n`;
  const flagKinds = new Map<string, NameKind>();
  for (const n of nodes)
    for (const f of n.flags) if (f.kind && !flagKinds.has(f.spelling)) flagKinds.set(f.spelling, f.kind);
  const positionalCases = nodes.flatMap((n) =>
    n.positionals.flatMap((kind, i) => (kind ? [`    ${q(`${n.path}:${i}`)}) echo ${kind} ;;\n`] : [])),
  );
  return [
    fn('commands', (n) => n.commands.map((c) => c.name)),
    fn('flags', (n) => n.flags.map((f) => f.spelling)),
    fn('valued', (n) => n.flags.filter((f) => f.valued).map((f) => f.spelling)),
    `${name('flagkind')}() {\n  case "$1" in\n${[...flagKinds]
      .map(([spelling, kind]) => `    ${q(spelling)}) echo ${kind} ;;\n`)
      .join('')}  esac\n}\n`,
    `${name('poskind')}() {\n  case "$1:$2" in\n${positionalCases.join('')}  esac\n}\n`,
    `${name('names')}() {\n  CTL_CONNECT_TIMEOUT=\${CTL_CONNECT_TIMEOUT:-300ms} CTL_TIMEOUT=\${CTL_TIMEOUT:-300ms} \\\n    command ctl completion names "$1" \${2:+"--city=$2"} 2>/dev/null\n}\n`,
  ].join('\n');
}

function bash(nodes: Node[]): string {
  return `# ctl completion for bash. Load it with: source <(ctl completion bash)
# or save it as ~/.local/share/bash-completion/completions/ctl

${caseFunctions(nodes, (what) => `_ctl_${what}`)}
_ctl() {
  local cur=\${COMP_WORDS[COMP_CWORD]} prev= cmd= word i npos=0 city= kind
  (( COMP_CWORD > 0 )) && prev=\${COMP_WORDS[COMP_CWORD-1]}
  for (( i = 1; i < COMP_CWORD; i++ )); do
    word=\${COMP_WORDS[i]}
    if [[ $word == -* ]]; then
      [[ $word == --city=* ]] && city=\${word#--city=}
      [[ $word == --city ]] && city=\${COMP_WORDS[i+1]}
      [[ $word != *=* && " $(_ctl_valued "$cmd") " == *" $word "* ]] && (( i++ ))
      continue
    fi
    if [[ " $(_ctl_commands "$cmd") " == *" $word "* ]]; then cmd=\${cmd:+$cmd }$word; else (( npos++ )); fi
  done
  if [[ $prev == -* && " $(_ctl_valued "$cmd") " == *" $prev "* ]]; then
    kind=$(_ctl_flagkind "$prev")
    COMPREPLY=()
    [[ -n $kind ]] && COMPREPLY=($(compgen -W "$(_ctl_names "$kind" "$city")" -- "$cur"))
    return
  fi
  local offer
  offer=$(_ctl_commands "$cmd")
  if [[ $cur != -* && -z $offer ]]; then
    kind=$(_ctl_poskind "$cmd" "$npos")
    [[ -n $kind ]] && offer=$(_ctl_names "$kind" "$city")
  fi
  if [[ $cur == -* || -z $offer ]]; then offer=$(_ctl_flags "$cmd"); fi
  COMPREPLY=($(compgen -W "$offer" -- "$cur"))
}

complete -o default -F _ctl ctl
`;
}

function zsh(nodes: Node[]): string {
  return `#compdef ctl
# ctl completion for zsh. Load it with: source <(ctl completion zsh)   (after compinit)
# or save it as _ctl in a directory of your $fpath

${caseFunctions(nodes, (what) => `_ctl_${what}`)}
_ctl() {
  local cmd= word i npos=0 city= kind
  for (( i = 2; i < CURRENT; i++ )); do
    word=\${words[i]}
    if [[ $word == -* ]]; then
      [[ $word == --city=* ]] && city=\${word#--city=}
      [[ $word == --city ]] && city=\${words[i+1]}
      [[ $word != *=* && " $(_ctl_valued "$cmd") " == *" $word "* ]] && (( i++ ))
      continue
    fi
    if [[ " $(_ctl_commands "$cmd") " == *" $word "* ]]; then cmd=\${cmd:+$cmd }$word; else (( npos++ )); fi
  done
  local prev=\${words[CURRENT-1]}
  if [[ $prev == -* && " $(_ctl_valued "$cmd") " == *" $prev "* ]]; then
    kind=$(_ctl_flagkind "$prev")
    local names=
    [[ -n $kind ]] && names=$(_ctl_names "$kind" "$city")
    if [[ -n $names ]]; then compadd -- \${(f)names}; else _files; fi
    return
  fi
  local offer
  offer=$(_ctl_commands "$cmd")
  if [[ \${words[CURRENT]} != -* && -z $offer ]]; then
    kind=$(_ctl_poskind "$cmd" "$npos")
    [[ -n $kind ]] && offer=$(_ctl_names "$kind" "$city")
  fi
  if [[ \${words[CURRENT]} == -* || -z $offer ]]; then offer=$(_ctl_flags "$cmd"); fi
  compadd -- \${=offer}
}

if (( $+functions[compdef] )); then compdef _ctl ctl; fi
`;
}

function fish(nodes: Node[]): string {
  const lines = [
    '# ctl completion for fish. Save it as ~/.config/fish/completions/ctl.fish, or: ctl completion fish | source',
    '',
  ];
  const caseFn = (what: string, pick: (n: Node) => string[]) => {
    lines.push(`function __ctl_${what}`, '    switch "$argv[1]"');
    for (const n of nodes) {
      const words = pick(n);
      lines.push(`        case ${q(n.path)}`);
      if (words.length) lines.push(`            printf '%s\\n' ${words.map(q).join(' ')}`);
    }
    lines.push('    end', 'end', '');
  };
  caseFn('commands', (n) => n.commands.map((c) => c.name));
  caseFn('valued', (n) => n.flags.filter((f) => f.valued).map((f) => f.spelling));
  lines.push(
    '# The command typed so far (the words that name commands, skipping flags and the values of those taking',
    '# one), then how many positional words it has: two lines.',
    'function __ctl_scan',
    "    set -l cmd ''",
    '    set -l n 0',
    '    set -l skip 0',
    '    for word in (commandline -opc)[2..-1]',
    '        if test $skip = 1',
    '            set skip 0',
    '            continue',
    '        end',
    "        if string match -q -- '-*' $word",
    "            if not string match -q -- '*=*' $word; and contains -- $word (__ctl_valued $cmd)",
    '                set skip 1',
    '            end',
    '            continue',
    '        end',
    '        if contains -- $word (__ctl_commands $cmd)',
    '            set cmd (string trim -- "$cmd $word")',
    '        else',
    '            set n (math $n + 1)',
    '        end',
    '    end',
    '    echo $n',
    '    echo $cmd',
    'end',
    '',
    'function __ctl_at',
    '    set -l scan (__ctl_scan)',
    '    test "$scan[2]" = "$argv[1]"',
    'end',
    '',
    'function __ctl_npos',
    '    set -l scan (__ctl_scan)',
    '    echo $scan[1]',
    'end',
    '',
    'function __ctl_city',
    '    set -l words (commandline -opc)',
    '    for i in (seq (count $words))',
    '        if test "$words[$i]" = --city; and test $i -lt (count $words)',
    '            echo $words[(math $i + 1)]',
    '            return',
    "        else if string match -q -- '--city=*' $words[$i]",
    "            string replace -- '--city=' '' $words[$i]",
    '            return',
    '        end',
    '    end',
    'end',
    '',
    '# Names from the running supervisor: quickly, and nothing when it is down.',
    'function __ctl_names',
    '    set -q CTL_CONNECT_TIMEOUT; or set -lx CTL_CONNECT_TIMEOUT 300ms',
    '    set -q CTL_TIMEOUT; or set -lx CTL_TIMEOUT 300ms',
    '    set -l city (__ctl_city)',
    '    if test -n "$city"',
    '        command ctl completion names $argv[1] --city $city 2>/dev/null',
    '    else',
    '        command ctl completion names $argv[1] 2>/dev/null',
    '    end',
    'end',
    '',
  );
  for (const n of nodes) {
    const at = q(`__ctl_at ${q(n.path)}`);
    for (const c of n.commands) lines.push(`complete -c ctl -f -n ${at} -a ${q(c.name)} -d ${q(c.description)}`);
    for (const f of n.flags) {
      const option = f.spelling.startsWith('--') ? `-l ${q(f.spelling.slice(2))}` : `-s ${q(f.spelling.slice(1))}`;
      const names = f.kind ? ` -x -a ${q(`(__ctl_names ${f.kind})`)}` : f.valued ? ' -r' : '';
      lines.push(`complete -c ctl -n ${at} ${option}${names} -d ${q(f.description)}`);
    }
    for (const [i, kind] of n.positionals.entries()) {
      if (!kind) continue;
      const where = q(`__ctl_at ${q(n.path)}; and test (__ctl_npos) = ${i}`);
      lines.push(`complete -c ctl -f -n ${where} -a ${q(`(__ctl_names ${kind})`)}`);
    }
  }
  return lines.join('\n') + '\n';
}

export const completionCommand = withCommands(
  command({
    name: 'completion',
    description:
      'Print a shell completion script for bash, zsh or fish: commands, flags, and names (cities, agents, sessions, beads, formulas, hosts) from the running supervisor',
    examples: [
      'source <(ctl completion bash)                          # in ~/.bashrc',
      'ctl completion zsh > "${fpath[1]}/_ctl"                # zsh, then restart it',
      'ctl completion fish > ~/.config/fish/completions/ctl.fish',
    ],
    args: { shell: { type: 'positional', description: 'bash, zsh or fish', required: true, valueHint: 'SHELL' } },
    async run({ args }) {
      const generators: Record<string, (nodes: Node[]) => string> = { bash, zsh, fish };
      const generate = generators[args.shell];
      if (!generate) throw new CliError(`no completion for ${JSON.stringify(args.shell)}: expected bash, zsh or fish`);
      process.stdout.write(generate(await commandTree()));
    },
  }),
  { names: namesCommand },
);
