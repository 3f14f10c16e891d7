import { expect } from 'chai';
import { CityApi, idNumber, type Bead, type BeadCreate, type DepKind } from './city-api.js';
import { withSupervisor, type TestSupervisor } from './supervisor.js';

// What the tests of beads, mail and convoys over the API share (beads-api, bead-deps, bead-ready, bead-lists,
// idempotency, mail-api, convoys-api, bead-comments, bead-durability): each file starts a supervisor of its own
// with a running city, and talks to it through the supervisor's proxy (`/v0/city/{cityName}/…`). Shapes and
// rules: api-contract.md §6, §8.2, §8.4, §8.5 and work-model.md §1.2, §1.3, §6, §7.

/** What each of these files talks to: its own supervisor, and the city `withWorkCity` runs on it. */
export interface WorkCity {
  sup: TestSupervisor;
  api: CityApi;
}

/**
 * The fixture these files open their describe with: a supervisor of its own with one running city, `name` (by
 * default `work-city`, whose bead ids are `wc-<n>`), handed to `use` once it runs, and cleaned up after the
 * describe (`withSupervisor`).
 */
export function withWorkCity(use: (city: WorkCity) => void, name = 'work-city'): void {
  withSupervisor(async (sup) => {
    await sup.createCity(name);
    use({ sup, api: new CityApi(sup, name) });
  });
}

/** Dependency kinds that hold a bead out of ready while their target is open, and those that do not. */
export const BLOCKING: DepKind[] = ['blocks', 'waits-for', 'conditional-blocks'];
export const NON_BLOCKING: DepKind[] = ['tracks', 'relates-to', 'parent-child'];

export const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
export const FUTURE = () => new Date(Date.now() + 24 * 3600_000).toISOString();
export const PAST = () => new Date(Date.now() - 3600_000).toISOString();

/** One page of a list. */
export interface Page<T> {
  items: T[];
  total: number;
  next_cursor?: string;
}

/** `count` creates, `concurrency` in flight at a time; the beads in the order of `make`'s index. */
export async function createMany(
  api: CityApi,
  count: number,
  make: (i: number) => BeadCreate,
  concurrency = 32,
): Promise<Bead[]> {
  const out: Bead[] = new Array<Bead>(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        out[i] = await api.create(make(i));
      }
    }),
  );
  return out;
}

/** Asserts a list is newest first: ids strictly descending by number, `created_at` never increasing. */
export function expectNewestFirst(items: { id: string; created_at: string }[], what: string): void {
  for (let k = 1; k < items.length; k++) {
    const [a, b] = [items[k - 1], items[k]];
    expect(idNumber(a.id), `${what}: ${a.id} before ${b.id}`).to.be.greaterThan(idNumber(b.id));
    expect(Date.parse(a.created_at), `${what}: created_at of ${a.id} ≥ ${b.id}`).to.be.at.least(
      Date.parse(b.created_at),
    );
  }
}

export function ids(items: { id: string }[]): string[] {
  return items.map((b) => b.id);
}

/** A page token decoded by the test's own reading of §6.2: `v1:` + base64url JSON. */
export function decodeCursor(token: string): Record<string, unknown> {
  expect(token.startsWith('v1:'), token).to.equal(true);
  expect(token.slice(3)).to.match(/^[A-Za-z0-9_-]+$/);
  return JSON.parse(Buffer.from(token.slice(3), 'base64url').toString('utf8')) as Record<string, unknown>;
}

export function encodeCursor(value: unknown): string {
  return 'v1:' + Buffer.from(JSON.stringify(value)).toString('base64url');
}
