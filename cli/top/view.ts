import { createElement as h, useEffect, useState, type ReactNode } from 'react';
import { Box, Text, useApp, useInput, useWindowSize } from 'ink';
import type { WireEvent, WireTaggedEvent } from '../../shared/dto/events.js';
import { attach, openPage, openRun, pageOf, respond, type Answer } from './actions.js';
import { hostCell, hostColumnWidth, isRemoteHost, sessionTail } from './columns.js';
import {
  agentRowsOf,
  heldBeadOf,
  sessionRows,
  type AgentRow,
  type CityView,
  type Connection,
  type SessionRow,
  type TopModel,
} from './model.js';
import { reviewCells, reviewRows, reviewsSummary, type ReviewRow } from './reviews.js';

// `ctl top`'s screen, drawn by Ink: a header (scope, connection), the sessions (waiting on a person first, one
// selected), the agents, the reviews waiting for a person (a count per city, the longest waiting listed when there
// is room), the recent events filling what is left, and a footer (the last outcome or a prompt, the
// keys). Everything is cut to the terminal's width and height, and drawn again when the terminal is resized.

const KEYS = '↑↓ select  tab agents  a allow/answer  d deny  t attach  o page  r run  q quit';

type Prompt = { action: Extract<Answer, 'deny' | 'answer'>; row: SessionRow; text: string };

function useModel(model: TopModel) {
  const [state, setState] = useState(model.state);
  useEffect(() => {
    const changed = () => setState(model.state);
    model.on('change', changed);
    return () => void model.off('change', changed);
  }, [model]);
  return state;
}

function pad(text: string, width: number): string {
  return text.length >= width ? `${text.slice(0, width - 1)} ` : text.padEnd(width);
}

function line(key: string, children: ReactNode[], inverse = false): ReactNode {
  return h(Text, { key, wrap: 'truncate-end', inverse }, ...children);
}

function connectionText(c: Connection): ReactNode {
  if (c.state === 'live') return h(Text, { color: 'green' }, '● live');
  if (c.state === 'connecting') return h(Text, { color: 'yellow' }, '○ connecting');
  // The stream's own words: `connect failed` means the supervisor is not answering.
  const down = /connect failed/.test(c.why);
  return h(Text, { color: down ? 'red' : 'yellow' }, `${down ? '✗ supervisor down' : '○ reconnecting'}: ${c.why}`);
}

function stateColour(state: string): string | undefined {
  if (/quarantined|failed|crashed/.test(state)) return 'red';
  // Its host stopped answering: nothing starts it again until a person wakes or closes it.
  if (state === 'lost') return 'yellow';
  if (/working|in-turn|active|awake/.test(state)) return 'green';
  if (/suspended|stopped|asleep|closed/.test(state)) return 'gray';
  return undefined;
}

/** `hostWidth`: the HOST column's width, 0 when the terminal is too narrow for it. */
function sessionLine(
  row: SessionRow,
  showCity: boolean,
  hostWidth: number,
  selected: boolean,
  index: number,
): ReactNode {
  const s = row.session;
  const name = s.alias ?? s.session_name;
  const activity = s.pending ? 'waiting' : (s.activity ?? '');
  const said = sessionTail(s);
  const tail = h(Text, said.tone === 'output' ? { dimColor: true } : { color: 'yellow' }, said.text);
  return line(
    `s${index}`,
    [
      selected ? '▶ ' : '  ',
      ...(showCity ? [pad(row.city, 12)] : []),
      pad(s.id, 10),
      pad(name, 18),
      h(Text, { color: stateColour(s.state) }, pad(s.state, 11)),
      ...(hostWidth
        ? [
            isRemoteHost(s.host)
              ? h(Text, { color: 'cyan' }, hostCell(s.host, hostWidth))
              : h(Text, { dimColor: true }, hostCell(s.host, hostWidth)),
          ]
        : []),
      h(Text, { color: s.pending ? 'yellow' : stateColour(activity) }, pad(activity, 9)),
      tail,
    ],
    selected,
  );
}

/** A city's problem (not running, unreachable) in place of its agents, then one line per agent. */
function agentLines(cities: CityView[], showCity: boolean, selected: string | undefined): ReactNode[] {
  const out: ReactNode[] = [];
  for (const c of cities) {
    if (c.problem) out.push(line(`p-${c.info.name}`, [h(Text, { color: 'red' }, `  ${c.info.name}: ${c.problem}`)]));
  }
  for (const { city, agent: a } of agentRowsOf(cities)) {
    const state = a.available ? a.state : 'unavailable';
    const note =
      a.unavailable_reason ?? a.wait_reason ?? (a.restart_pending ? 'restarts once idle (configuration changed)' : '');
    const isSelected = selected === `${city}/${a.name}`;
    out.push(
      line(
        `a-${city}-${a.name}`,
        [
          isSelected ? '▶ ' : '  ',
          ...(showCity ? [pad(city, 12)] : []),
          pad(a.name, 18),
          h(Text, { color: stateColour(state) }, pad(state, 12)),
          pad(`${a.session_count} (${a.min_active_sessions}–${a.max_active_sessions})`, 9),
          pad(a.active_bead ?? '', 10),
          h(Text, { dimColor: true }, note),
        ],
        isSelected,
      ),
    );
  }
  return out;
}

function eventLine(e: WireEvent | WireTaggedEvent, showCity: boolean, index: number): ReactNode {
  const time = new Date(e.ts).toTimeString().slice(0, 8);
  const colour = /(failed|crashed|quarantined|missing)$/.test(e.type)
    ? 'red'
    : e.type === 'session.pending' || e.type === 'review.requested'
      ? 'yellow'
      : 'cyan';
  const tail = [e.subject, e.message].filter((t) => t).join('  ');
  return line(`e${index}`, [
    h(Text, { dimColor: true }, `  ${time}  `),
    ...(showCity ? [pad('city' in e ? e.city : '', 12)] : []),
    h(Text, { color: colour }, pad(e.type, 31)),
    tail.replace(/\s+/g, ' '),
  ]);
}

/** A pending review's line: its city, bead, agent, how long it has waited, what it changed. */
function reviewLine(row: ReviewRow, showCity: boolean, now: number, index: number): ReactNode {
  const cells = reviewCells(row.review, now);
  return line(`r${index}`, [
    '  ',
    ...(showCity ? [pad(row.city, 12)] : []),
    pad(cells.bead, 12),
    pad(cells.agent, 18),
    h(Text, { color: 'yellow' }, pad(cells.age, 8)),
    h(Text, { dimColor: true }, cells.what),
  ]);
}

function heading(text: string, extra = ''): ReactNode {
  return line(text, [h(Text, { bold: true }, text), h(Text, { dimColor: true }, extra)]);
}

/**
 * How the rows left after the fixed lines are shared: sessions, then agents, then pending reviews (a list only when
 * there is room: their count is in their heading), then events take what is left.
 */
function share(rows: number, sessions: number, agents: number, reviews: number): [number, number, number, number] {
  const body = Math.max(rows - 4, 3);
  const s = Math.max(Math.min(sessions, Math.max(3, Math.floor(body * 0.45))), 1);
  const a = Math.max(Math.min(agents, Math.max(2, Math.floor(body * 0.3))), 1);
  const r = Math.max(Math.min(reviews, Math.floor(body * 0.2), body - s - a - 1), 0);
  return [s, a, r, Math.max(body - s - a - r, 1)];
}

/** Draws again every `everyMs`: how long a review has waited grows with nothing to tell of it. */
function useRedrawEvery(everyMs: number): void {
  const [, setTick] = useState(0);
  useEffect(() => {
    const timer = setInterval(() => setTick((n) => n + 1), everyMs);
    return () => clearInterval(timer);
  }, [everyMs]);
}

export function TopScreen({ model }: { model: TopModel }): ReactNode {
  const state = useModel(model);
  useRedrawEvery(15_000);
  const now = Date.now();
  const { exit, suspendTerminal } = useApp();
  const { columns, rows } = useWindowSize();
  const [selectedId, setSelectedId] = useState<string | undefined>(undefined);
  const [flash, setFlash] = useState<{ text: string; bad?: boolean } | undefined>(undefined);
  const [prompt, setPrompt] = useState<Prompt | undefined>(undefined);
  // Which list the arrows move in and o and r act on; a, d and t act on sessions only.
  const [focus, setFocus] = useState<'sessions' | 'agents'>('sessions');
  const [selectedAgentId, setSelectedAgentId] = useState<string | undefined>(undefined);

  const showCity = model.city === undefined;
  const sessions = sessionRows(state.cities);
  const found = sessions.findIndex((r) => `${r.city}/${r.session.id}` === selectedId);
  const selected = found >= 0 ? found : 0;
  const row = sessions[selected];
  const agents = agentRowsOf(state.cities);
  const agentKey = (a: AgentRow) => `${a.city}/${a.agent.name}`;
  const foundAgent = agents.findIndex((a) => agentKey(a) === selectedAgentId);
  const selectedAgent = foundAgent >= 0 ? foundAgent : 0;
  const agentRow = agents[selectedAgent];

  const run = (busy: string, work: () => Promise<string>) => {
    setFlash({ text: busy });
    work().then(
      (text) => setFlash({ text }),
      (err: unknown) => setFlash({ text: (err as Error).message, bad: true }),
    );
  };

  useInput((input, key) => {
    if (prompt) {
      if (key.escape) return setPrompt(undefined);
      if (key.return) {
        setPrompt(undefined);
        return run(prompt.action === 'deny' ? 'Denying…' : 'Answering…', () =>
          respond(model.api, prompt.row, prompt.action, prompt.text.trim()),
        );
      }
      if (key.backspace || key.delete) return setPrompt({ ...prompt, text: prompt.text.slice(0, -1) });
      if (!key.ctrl && !key.meta && input) setPrompt({ ...prompt, text: prompt.text + input });
      return;
    }
    // From the latest selection, not this render's: keys typed faster than the screen redraws all count.
    const step =
      <R>(list: R[], keyOf: (r: R) => string, by: number) =>
      (previous: string | undefined) => {
        const at = list.findIndex((r) => keyOf(r) === previous);
        const next = list[Math.min(Math.max((at >= 0 ? at : 0) + by, 0), list.length - 1)];
        return next ? keyOf(next) : previous;
      };
    const move = (by: number) =>
      focus === 'agents'
        ? setSelectedAgentId(step(agents, agentKey, by))
        : setSelectedId(step(sessions, (r) => `${r.city}/${r.session.id}`, by));
    if (input === 'q') return exit();
    if (key.tab) return setFocus(focus === 'agents' ? 'sessions' : 'agents');
    if (key.upArrow || input === 'k') return move(-1);
    if (key.downArrow || input === 'j') return move(1);
    if (key.pageUp) return move(-10);
    if (key.pageDown) return move(10);
    const target = focus === 'agents' ? agentRow : row;
    if (input === 'o' && target) return run('Opening…', () => openPage(model.api, pageOf(target)));
    if (input === 'r' && target) {
      return run('Opening…', () => openRun(model.api, target, heldBeadOf(state.cities, target)));
    }
    if (focus === 'agents' && ((input !== '' && 'adt'.includes(input)) || key.return)) {
      return setFlash({ text: 'a, d and t act on sessions: press tab to select one', bad: true });
    }
    if (!row) return;
    const pending = row.session.pending;
    if (input === 'a' || input === 'd') {
      if (!pending) return setFlash({ text: `${row.session.id} is not waiting on anything`, bad: true });
      if (pending.kind === 'question') {
        if (input === 'd') return setFlash({ text: 'a question is answered: press a', bad: true });
        return setPrompt({ action: 'answer', row, text: '' });
      }
      if (input === 'd') return setPrompt({ action: 'deny', row, text: '' });
      return run('Allowing…', () => respond(model.api, row, 'allow'));
    }
    if (input === 't' || key.return) {
      if (!row.session.attach) {
        return setFlash({
          text: row.session.running
            ? `${row.session.id} has no terminal to join (its provider ${row.session.provider} does not run in tmux)`
            : `${row.session.id} is not running (${row.session.state})`,
          bad: true,
        });
      }
      let said = '';
      void suspendTerminal(() => {
        said = attach(model.api, row);
      }).then(() => setFlash({ text: said }));
    }
  });

  const waiting = sessions.filter((r) => r.session.pending).length;
  const hostWidth = hostColumnWidth(
    sessions.map((r) => r.session.host),
    columns,
  );
  const agentRows = agentLines(
    state.cities,
    showCity,
    focus === 'agents' ? (selectedAgentId ?? (agentRow && agentKey(agentRow))) : undefined,
  );
  // A long outcome (a sign-in link to copy) wraps rather than being cut; the lists make room for it.
  const flashRows = flash && !prompt ? Math.max(Math.ceil(flash.text.length / Math.max(columns, 1)), 1) : 1;
  const reviews = reviewRows(state.cities);
  const [sessionRoom, agentRoom, reviewRoom, eventRoom] = share(
    rows - 3 - flashRows,
    sessions.length || 1,
    agentRows.length || 1,
    reviews.length,
  );
  // The selected session stays in view: the window scrolls with it.
  const first = Math.min(Math.max(selected - sessionRoom + 1, 0), Math.max(sessions.length - sessionRoom, 0));
  // The same for the selected agent (after the lines of cities with a problem, which come first).
  const agentAt = agentRows.length - agents.length + selectedAgent;
  const firstAgent =
    focus === 'agents' ? Math.min(Math.max(agentAt - agentRoom + 1, 0), Math.max(agentRows.length - agentRoom, 0)) : 0;
  const scope = model.city ? `city ${model.city.name}` : `every city (${state.cities.length})`;
  const agentsTotal = state.cities.reduce((n, c) => n + c.agents.length, 0);

  return h(
    Box,
    { flexDirection: 'column', width: columns, height: rows },
    line('title', [h(Text, { bold: true }, `ctl top — ${scope}  `), connectionText(state.connection)]),
    line('summary', [
      `${agentsTotal} agent${agentsTotal === 1 ? '' : 's'} · ${sessions.length} session${sessions.length === 1 ? '' : 's'} · `,
      h(Text, { color: waiting ? 'yellow' : undefined, bold: waiting > 0 }, `${waiting} waiting for you`),
      h(Text, { dimColor: true }, `  ${model.api.base}`),
    ]),
    heading('SESSIONS', `${waiting ? '  (waiting first)' : ''}${focus === 'sessions' ? '  ◀' : ''}`),
    ...(sessions.length === 0
      ? [line('no-sessions', [h(Text, { dimColor: true }, '  No sessions.')])]
      : sessions
          .slice(first, first + sessionRoom)
          .map((r, i) =>
            sessionLine(r, showCity, hostWidth, focus === 'sessions' && first + i === selected, first + i),
          )),
    heading('AGENTS', focus === 'agents' ? '  ◀' : ''),
    ...(agentRows.length === 0
      ? [line('no-agents', [h(Text, { dimColor: true }, '  No agents.')])]
      : agentRows.slice(firstAgent, firstAgent + agentRoom)),
    heading('REVIEWS', `  ${reviewsSummary(state.cities, showCity, now)}`),
    ...reviews.slice(0, reviewRoom).map((r, i) => reviewLine(r, showCity, now, i)),
    heading('EVENTS'),
    ...state.events.slice(-eventRoom).map((e, i) => eventLine(e, showCity, i)),
    h(Box, { key: 'fill', flexGrow: 1 }),
    prompt
      ? line('prompt', [
          h(
            Text,
            { color: 'yellow' },
            prompt.action === 'deny' ? `Deny ${prompt.row.session.id}, reason: ` : `Answer ${prompt.row.session.id}: `,
          ),
          prompt.text,
          h(Text, { inverse: true }, ' '),
          h(Text, { dimColor: true }, '  (Enter sends, Esc cancels)'),
        ])
      : h(Text, { key: 'flash', wrap: 'wrap', color: flash?.bad ? 'red' : undefined }, flash?.text ?? ''),
    line('keys', [h(Text, { dimColor: true }, KEYS)]),
  );
}
