#!/usr/bin/env node
// An interactive terminal agent, for the tmux runtime (and for trying `ctl session attach`): it draws a prompt
// line `❯ `, reads a line typed at it, shows `… thinking (esc to interrupt)` for a while, then answers
// `You said: <line>`. `run: <cmd>` first asks "Do you want to proceed?" in a numbered menu (1 yes, 2 no) and
// answers with what was decided (it runs nothing). Escape while thinking interrupts the turn. What it draws is
// what screen rules (controller/sessions/tmux/rules/tui-agent.toml) read; it knows nothing of ctl.
import { stdin, stdout } from 'node:process';

const THINK_MS = Number(process.env.TUI_AGENT_THINK_MS ?? 300);

let mode = 'prompt'; // prompt | thinking | menu
let line = '';
let timer;
let pendingCommand = '';

function write(text) {
  stdout.write(text);
}

function prompt() {
  mode = 'prompt';
  line = '';
  write('\r\n❯ ');
}

function answer(text) {
  write(`\r\n${text}\r\n`);
  prompt();
}

function think(then) {
  mode = 'thinking';
  write('\r\n… thinking (esc to interrupt)');
  timer = setTimeout(() => {
    write('\r\x1b[2K');
    then();
  }, THINK_MS);
}

function submit(text) {
  const run = /^run:\s*(.+)$/.exec(text);
  if (run) {
    pendingCommand = run[1];
    think(() => {
      mode = 'menu';
      write(`Bash(${pendingCommand})\r\nDo you want to proceed?\r\n❯ 1. Yes\r\n  2. No\r\n`);
    });
    return;
  }
  if (text === 'exit') process.exit(0);
  think(() => answer(`You said: ${text}`));
}

stdin.setRawMode?.(true);
stdin.setEncoding('utf8');
stdin.on('data', (chunk) => {
  for (const ch of chunk) {
    if (ch === '\x03') process.exit(130);
    if (mode === 'thinking') {
      if (ch === '\x1b') {
        clearTimeout(timer);
        write('\r\x1b[2K');
        answer('Interrupted by user');
      }
      continue;
    }
    if (mode === 'menu') {
      if (ch === '1') think(() => answer(`Ran: ${pendingCommand}`));
      else if (ch === '2' || ch === '\x1b') answer(`Denied: ${pendingCommand}`);
      continue;
    }
    if (ch === '\r' || ch === '\n') {
      const text = line.trim();
      write('\r\n');
      if (text) submit(text);
      else prompt();
    } else if (ch === '\x7f') {
      if (line) {
        line = line.slice(0, -1);
        write('\b \b');
      }
    } else if (ch >= ' ') {
      line += ch;
      write(ch);
    }
  }
});
stdin.on('end', () => process.exit(0));

write('Welcome to the example terminal agent.');
prompt();
