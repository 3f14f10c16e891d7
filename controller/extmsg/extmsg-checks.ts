import { isIP } from 'node:net';
import type { ConversationRef, ExternalAttachment } from '../../shared/dto/extmsg.js';
import { Problem } from '../../shared/http/problem.js';

const KINDS = new Set(['dm', 'room', 'thread']);

/** A conversation reference with every part it needs; a 422 naming the part otherwise. */
export function checkConversation(c: ConversationRef | undefined, at: string): asserts c is ConversationRef {
  if (!c || typeof c !== 'object') throw invalid(at, 'a conversation is required');
  for (const key of ['scope_id', 'provider', 'account_id', 'conversation_id'] as const) {
    if (typeof c[key] !== 'string' || c[key].trim() === '') throw invalid(`${at}.${key}`, `${key} is required`);
  }
  if (!KINDS.has(c.kind)) throw invalid(`${at}.kind`, 'kind is dm, room or thread');
  if (c.kind === 'thread' && !c.parent_conversation_id) {
    throw invalid(`${at}.parent_conversation_id`, 'a thread names its room (parent_conversation_id)');
  }
}

const MAX_ATTACHMENTS = 32;

/**
 * Attachments as the reference's adapters send them — `{provider_id, url, mime_type}` objects — each with a URL
 * (http, https, or the chat system's own scheme); a 422 naming the one at fault otherwise. Answers them as kept.
 */
export function checkAttachments(list: ExternalAttachment[] | undefined, at: string): ExternalAttachment[] {
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) throw invalid(at, 'attachments is a list of {provider_id, url, mime_type}');
  if (list.length > MAX_ATTACHMENTS) throw invalid(at, `at most ${MAX_ATTACHMENTS} attachments`);
  return list.map((a, i) => {
    const where = `${at}[${i}]`;
    if (!a || typeof a !== 'object' || Array.isArray(a)) {
      throw invalid(where, 'an attachment is an object {provider_id, url, mime_type}');
    }
    if (typeof a.url !== 'string' || !/^[a-z][a-z0-9+.-]*:\S+$/i.test(a.url)) {
      throw invalid(`${where}.url`, 'url is required: where the file can be fetched');
    }
    for (const key of ['provider_id', 'mime_type'] as const) {
      if (a[key] !== undefined && typeof a[key] !== 'string') throw invalid(`${where}.${key}`, `${key} is a string`);
    }
    return { provider_id: a.provider_id ?? '', url: a.url, mime_type: a.mime_type ?? '' };
  });
}

/**
 * An adapter's callback URL: http(s), to a loopback address or a host the city allows
 * (`[extmsg] allowed_callback_hosts`). The city POSTs to it, so anything else would let a caller make the
 * controller reach into the machine's networks.
 */
export function checkCallbackUrl(url: string, allowedHosts: string[]): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalid('body.callback_url', `${url} is not a URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw invalid('body.callback_url', 'callback_url must be http:// or https://');
  }
  if (parsed.username || parsed.password) throw invalid('body.callback_url', 'callback_url may not carry credentials');
  const host = parsed.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const loopback = host === 'localhost' || (isIP(host) === 4 && host.startsWith('127.')) || host === '::1';
  if (!loopback && !allowedHosts.includes(host)) {
    throw invalid(
      'body.callback_url',
      `callback_url must reach this machine (127.0.0.1, ::1, localhost) or a host in [extmsg] allowed_callback_hosts; ${host} is neither`,
    );
  }
}

/**
 * A message cut into parts of at most `max` characters (0: one part), at a line break or a space where one is
 * near the end of a part, else in the middle of a word — dropping only the space or line break it is cut at.
 */
export function splitMessage(text: string, max: number): string[] {
  if (max <= 0 || text.length <= max) return [text];
  const parts: string[] = [];
  let rest = text;
  while (rest.length > max) {
    let cut = rest.lastIndexOf('\n', max);
    if (cut < max / 2) cut = rest.lastIndexOf(' ', max);
    if (cut < max / 2) cut = max;
    parts.push(rest.slice(0, cut));
    rest = rest.slice(cut).replace(/^[\n ]/, '');
  }
  if (rest.length > 0) parts.push(rest);
  return parts;
}

/** A 422 `validation-failed` naming where the input is wrong. */
export function invalid(location: string, message: string): Problem {
  return new Problem('validation-failed', `invalid: ${message}`, { errors: [{ location, message }] });
}
