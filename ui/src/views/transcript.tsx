import { useEffect, useRef } from 'preact/hooks';

/** One transcript entry as the session stream's raw frames carry it. */
export interface Entry {
  seq: number;
  ts: string;
  kind: string;
  actor: string;
  text?: string;
  turn?: number;
  chunk?: boolean;
  tool_use_id?: string;
  is_error?: boolean;
  name?: string;
  frame?: { parent_tool_use_id?: string | null };
  [key: string]: unknown;
}

/** What the page shows: a message, or a tool call with its result folded under it (and its subagent's work). */
export type Item =
  | { type: 'message'; seq: number; role: string; text: string; ts: string; kind: string }
  | { type: 'tool'; seq: number; call: Entry; result?: Entry; children: Item[] };

/**
 * Entries into items: a reply written in pieces joins into one message; a tool result goes under its call (by
 * `tool_use_id`); what a subagent does (`parent_tool_use_id`) goes under the Task call that started it.
 */
export function itemsOf(entries: Entry[]): Item[] {
  const top: Item[] = [];
  const tools = new Map<string, Extract<Item, { type: 'tool' }>>();
  const parentOf = (e: Entry): Item[] => {
    const parent = e.frame?.parent_tool_use_id ?? (e.parent_tool_use_id as string | undefined);
    return (parent && tools.get(parent)?.children) || top;
  };
  for (const e of entries) {
    if (e.kind === 'tool_call') {
      const item = { type: 'tool' as const, seq: e.seq, call: e, children: [] };
      if (e.tool_use_id) tools.set(e.tool_use_id, item);
      parentOf(e).push(item);
      continue;
    }
    if (e.kind === 'tool_result') {
      const call = e.tool_use_id ? tools.get(e.tool_use_id) : undefined;
      if (call) call.result = e;
      else parentOf(e).push({ type: 'tool', seq: e.seq, call: e, children: [] });
      continue;
    }
    const role = roleOf(e.kind);
    if (!role) continue;
    const list = parentOf(e);
    const last = list.at(-1);
    if (role === 'assistant' && last?.type === 'message' && last.role === 'assistant' && last.kind === e.kind) {
      last.text += e.chunk ? (e.text ?? '') : `\n${e.text ?? ''}`;
      last.seq = e.seq;
      continue;
    }
    list.push({ type: 'message', seq: e.seq, role, text: e.text ?? '', ts: e.ts, kind: e.kind });
  }
  return top;
}

function roleOf(kind: string): string | undefined {
  switch (kind) {
    case 'user':
    case 'assistant':
      return kind;
    case 'pending':
    case 'pending_cleared':
    case 'error':
    case 'notice':
    case 'reset':
    case 'turn_failed':
      return 'system';
    default:
      return undefined;
  }
}

const ROLE_NAMES: Record<string, string> = { user: 'You', assistant: 'Agent', system: 'ctl' };

function ItemView({ item }: { item: Item }) {
  if (item.type === 'message') {
    return (
      <li class={`turn turn-${item.role}`}>
        <span class="who">{ROLE_NAMES[item.role] ?? item.role}</span>
        <div class="text">{item.text}</div>
      </li>
    );
  }
  return (
    <li class="turn turn-tool">
      <details>
        <summary>
          <span class="who">Tool</span> {item.call.text}
          {item.result ? (item.result.is_error ? ' — failed' : ' — done') : ' — running'}
        </summary>
        {item.result && <pre class="tool-result">{item.result.text}</pre>}
        {item.children.length > 0 && (
          <ol class="transcript nested">
            {item.children.map((c) => (
              <ItemView key={c.seq} item={c} />
            ))}
          </ol>
        )}
      </details>
    </li>
  );
}

/** The conversation, kept scrolled to its end while the reader is there. */
export function Transcript({ entries }: { entries: Entry[] }) {
  const list = useRef<HTMLOListElement>(null);
  const stick = useRef(true);
  useEffect(() => {
    const el = list.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  }, [entries]);
  const items = itemsOf(entries);
  return (
    <div role="log" aria-label="Transcript">
      <ol
        class="transcript"
        ref={list}
        aria-label="Conversation"
        tabIndex={0}
        onScroll={(e) => {
          const el = e.currentTarget;
          stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
        }}
      >
        {items.length === 0 && <li class="muted">No messages yet.</li>}
        {items.map((item) => (
          <ItemView key={item.seq} item={item} />
        ))}
      </ol>
    </div>
  );
}
