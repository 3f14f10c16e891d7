import type { BeadComment } from '../../shared/dto/beads.js';
import type { CityInfo } from '../../shared/dto/cities.js';
import { call, CSRF } from '../_api.js';
import type { Api } from '../_types.js';
import { command } from '../_command.js';
import { CliError } from '../_errors.js';
import { inCityFlags, integer, limitFlag, listLimit } from '../_flags.js';
import { json, line, noteMore, paint } from '../_output.js';
import { collectPages } from '../_pages.js';
import { cityPath, inCity } from '../_scope.js';

const idArg = { id: { type: 'positional', description: 'Bead id', required: true, complete: 'beads' } } as const;

/** The latest `limit` comments of a bead, oldest first (pages come newest first, each oldest first). */
export async function latestComments(
  api: Api,
  city: CityInfo,
  id: string,
  limit: number,
): Promise<{ items: BeadComment[]; total: number }> {
  const pages: BeadComment[][] = [];
  const body = await collectPages(limit, async (size, cursor) => {
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/bead/{id}/comments', {
        params: { path: { ...cityPath(city), id }, query: { limit: size, ...(cursor ? { cursor } : {}) } },
      }),
    );
    pages.push(data.items);
    return data;
  });
  return { items: pages.reverse().flat().slice(-limit), total: body.total };
}

/** A comment for people: `#id author, time` then its text, indented. */
export function commentLines(comments: BeadComment[]): void {
  for (const c of comments) {
    line(`${paint(`#${c.id}`, 'dim')} ${paint(c.author, 'cyan')}, ${c.created_at}`);
    for (const text of c.text.split('\n')) line(`  ${text}`);
  }
}

export const comment = command({
  name: 'comment',
  description: 'Comment on a bead (inside a session, as its agent: CTL_SESSION_ID), or --delete one of yours',
  examples: [
    'ctl bead comment alp-1 "Reproduced on main; the cache key misses the locale"',
    'ctl bead comment alp-1 --delete 12',
  ],
  args: {
    ...idArg,
    text: { type: 'positional', description: 'What to say (at most 10,000 characters)', required: false },
    delete: { type: 'string', description: 'Delete this comment of yours instead', valueHint: 'COMMENT_ID' },
    session: {
      type: 'string',
      description: 'The session writing it; its agent is the author (default: CTL_SESSION_ID)',
      valueHint: 'ID',
    },
    ...inCityFlags,
  },
  async run({ args: a }) {
    const text: string | undefined = a.text;
    const commentId = integer(a.delete, 'delete');
    if ((text === undefined) === (commentId === undefined)) throw new CliError('pass exactly one of TEXT and --delete');
    if (text !== undefined && text.trim() === '') throw new CliError('empty comment; say something');
    const session = a.session?.trim() || process.env.CTL_SESSION_ID?.trim();
    const { api, city } = await inCity(a);
    const path = { ...cityPath(city), id: a.id };
    if (commentId !== undefined) {
      const { data } = await call(
        api,
        api.client.DELETE('/v0/city/{cityName}/bead/{id}/comments/{commentId}', {
          params: { header: CSRF, path: { ...path, commentId }, query: session ? { session } : {} },
        }),
      );
      if (a.json) return json(data);
      return line(`Deleted comment ${commentId} of ${a.id}`);
    }
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/bead/{id}/comments', {
        params: { header: CSRF, path },
        body: { text: text!, ...(session ? { session } : {}) },
      }),
    );
    if (a.json) return json(data);
    line(`Commented on ${a.id} (#${data.id}, as ${data.author})`);
  },
});

export const comments = command({
  name: 'comments',
  description: "A bead's comments, oldest first (the latest --limit of them)",
  examples: ['ctl bead comments alp-1', 'ctl bead comments alp-1 --limit 5 --json'],
  args: { ...idArg, ...limitFlag, ...inCityFlags },
  async run({ args: a }) {
    const limit = listLimit(a.limit);
    const { api, city } = await inCity(a);
    const body = await latestComments(api, city, a.id, limit);
    if (a.json) return json(body);
    if (body.items.length === 0) return line(`No comments on ${a.id}.`);
    commentLines(body.items);
    noteMore(body.items.length, body.total);
  },
});
