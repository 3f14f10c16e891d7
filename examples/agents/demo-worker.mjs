#!/usr/bin/env node
// The demo city's worker: a pretend coding agent, no model and no network, that does real work through `ctl`.
// It speaks Claude Code's stream-json protocol (one JSON object per line each way) and, handed a bead —
//
//   Work on bead <id>: <title> (…)
//
// — reads the bead (`ctl bead show`), does its step, closes it (`ctl bead close`) and mails the result to
// whoever asked (`ctl mail send --to human`). Its "step" follows the bead's title:
//
//   reverse: <text>     the text backwards
//   upper: <text>       the text in capitals
//   count: <text>       how many words the text has
//   sum: <n> <n> …      the numbers added up
//   anything else       a note that it was done
//
// Other messages get a short answer. Each `ctl` call shows in the transcript as a tool use and its result.
// `ctl` is the one every session's program finds first on its PATH (its controller's own build), and it works on
// this session's city (CTL_CITY), as any agent's `ctl` does.
import { randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { createInterface } from 'node:readline';

const sessionId = process.argv.includes('--resume') ? process.argv[process.argv.indexOf('--resume') + 1] : randomUUID();
const send = (frame) => process.stdout.write(`${JSON.stringify(frame)}\n`);
const say = (content) =>
  send({
    type: 'assistant',
    message: { id: `msg_${randomUUID()}`, role: 'assistant', model: 'demo-worker', content },
    session_id: sessionId,
  });

/** Runs `ctl <args>`, shown as a tool use and its result; resolves with its stdout. */
function ctl(args) {
  const id = `toolu_${randomUUID().slice(0, 8)}`;
  say([{ type: 'tool_use', id, name: 'ctl', input: { command: `ctl ${args.join(' ')}` } }]);
  return new Promise((resolve, reject) => {
    execFile('ctl', args, { timeout: 30_000 }, (err, stdout, stderr) => {
      const output = (err ? stderr || err.message : stdout).trim();
      send({
        type: 'user',
        message: {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: id, content: output, is_error: Boolean(err) }],
        },
        session_id: sessionId,
      });
      if (err) reject(new Error(output.split('\n').at(-1)));
      else resolve(stdout);
    });
  });
}

/** The step a bead's title asks for. */
function step(title) {
  const [, verb, rest] = /^\s*(\w+):\s*(.*)$/.exec(title) ?? [];
  switch (verb?.toLowerCase()) {
    case 'reverse':
      return [...rest].reverse().join('');
    case 'upper':
      return rest.toUpperCase();
    case 'count':
      return `${rest.split(/\s+/).filter(Boolean).length} words`;
    case 'sum':
      return String(
        rest
          .split(/\s+/)
          .filter(Boolean)
          .map(Number)
          .reduce((a, b) => a + b, 0),
      );
    default:
      return `done: ${title}`;
  }
}

let turns = 0;
let initialised = false;

async function handle(text) {
  const started = Date.now();
  turns++;
  if (!initialised) {
    initialised = true;
    send({
      type: 'system',
      subtype: 'init',
      session_id: sessionId,
      cwd: process.cwd(),
      tools: ['ctl'],
      model: 'demo-worker',
    });
  }
  let reply;
  let failed = false;
  const work = /^Work on bead (\S+):/.exec(text);
  try {
    if (work) {
      const id = work[1];
      const bead = JSON.parse(await ctl(['bead', 'show', id, '--json']));
      const result = step(bead.title);
      await ctl(['bead', 'close', id]);
      await ctl([
        'mail',
        'send',
        '--to',
        'human',
        '--from',
        process.env.CTL_SESSION_NAME ?? 'worker',
        '--subject',
        `${id} done`,
        '--body',
        result,
      ]);
      reply = `Closed ${id}: ${result}`;
    } else if (text.startsWith('New mail:')) {
      reply = 'Noted the mail.';
    } else {
      reply = `I am the demo worker. Sling me a bead ("ctl sling worker <id>") and I will do it.`;
    }
  } catch (err) {
    failed = true;
    reply = `I could not do it: ${err.message}`;
  }
  say([{ type: 'text', text: reply }]);
  send({
    type: 'result',
    subtype: failed ? 'error_during_execution' : 'success',
    is_error: false,
    result: reply,
    session_id: sessionId,
    num_turns: turns,
    duration_ms: Date.now() - started,
    total_cost_usd: 0,
    usage: { input_tokens: text.length, output_tokens: reply.length },
  });
}

// One turn at a time, in order.
let queue = Promise.resolve();
createInterface({ input: process.stdin }).on('line', (line) => {
  let frame;
  try {
    frame = JSON.parse(line);
  } catch {
    return;
  }
  if (frame.type === 'control_request') {
    send({ type: 'control_response', response: { subtype: 'success', request_id: frame.request_id, response: {} } });
    return;
  }
  if (frame.type !== 'user') return;
  const content = frame.message?.content;
  const text = typeof content === 'string' ? content : (content ?? []).map((c) => c.text ?? '').join('');
  queue = queue.then(() => handle(text));
});
