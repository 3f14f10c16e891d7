import type { Bead } from '../../shared/dto/beads.js';
import type { ConvoyCheckResponse, ConvoyCreateInputBody, ConvoyGetResponse } from '../../shared/dto/convoys.js';
import { Problem } from '../../shared/http/problem.js';
import type { BeadsService, IdempotencyKey } from './beads-service.js';

/** The label of a convoy that does not close by itself when its last tracked bead closes. */
export const OWNED = 'owned';

/**
 * Convoys: `convoy` beads that track work through `tracks` dependency edges (convoy → item), which never
 * hold anything out of ready. Progress counts the tracked beads that are closed; a tracked bead that was
 * deleted still counts, as not closed. A convoy closes by itself when its last open member closes (unless `owned`), and
 * however a convoy is closed (here, or as a bead), `convoy.closed` is recorded.
 */
export class ConvoysService {
  constructor(private readonly beads: BeadsService) {
    beads.onClosed(async (bead) => {
      if (bead.issue_type === 'convoy') {
        await this.beads.recordEvent({ type: 'convoy.closed', actor: 'api', subject: bead.id, payload: {} });
      }
      // Convoys tracking it, a convoy among them, may be complete now.
      for (const convoy of this.beads.dependents(bead.id)) {
        const tracks = convoy.dependencies?.some((d) => d.depends_on_id === bead.id && d.type === 'tracks');
        // An owned convoy (`sling owned`) is closed by whoever owns it, never by itself.
        const owned = convoy.labels?.includes(OWNED) ?? false;
        if (
          convoy.issue_type === 'convoy' &&
          convoy.status !== 'closed' &&
          !owned &&
          tracks &&
          this.check(convoy.id).complete
        ) {
          await this.beads.close(convoy.id);
        }
      }
    });
  }

  /** The convoy with this id; 404 `convoy-not-found` for anything else. */
  convoy(id: string): Bead {
    const bead = this.beads.find(id);
    if (!bead || bead.issue_type !== 'convoy')
      throw new Problem('convoy-not-found', `not_found: convoy not found: ${id}`);
    return bead;
  }

  async create(
    input: ConvoyCreateInputBody,
    key?: IdempotencyKey,
    options: { owned?: boolean } = {},
  ): Promise<{ convoy: Bead; replayed: boolean }> {
    const items = [...new Set(input.items ?? [])];
    this.requireItems(items);
    // The convoy and its `tracks` edges are one write: a crash cannot leave a convoy missing its items.
    const { bead: convoy, replayed } = await this.beads.create(
      {
        title: input.title,
        type: 'convoy',
        metadata: input.rig ? { rig: input.rig } : {},
        ...(options.owned ? { labels: [OWNED] } : {}),
        dependencies: items.map((item) => ({ dependsOn: item, kind: 'tracks' as const })),
      },
      key,
    );
    if (!replayed)
      await this.beads.recordEvent({ type: 'convoy.created', actor: 'api', subject: convoy.id, payload: {} });
    return { convoy, replayed };
  }

  list(query: { limit: number; before?: string }): { items: Bead[]; total: number; more: boolean } {
    return this.beads.list({ type: 'convoy', limit: query.limit, before: query.before });
  }

  get(id: string): ConvoyGetResponse {
    const convoy = this.convoy(id);
    const ids = [
      ...new Set((convoy.dependencies ?? []).filter((d) => d.type === 'tracks').map((d) => d.depends_on_id)),
    ];
    const children = ids.map((item) => this.beads.find(item)).filter((b): b is Bead => b !== undefined);
    return {
      convoy,
      children,
      // Every tracked id, found or not: one that no longer resolves is not closed.
      progress: { total: ids.length, closed: children.filter((c) => c.status === 'closed').length },
    };
  }

  async add(id: string, items: string[]): Promise<void> {
    const convoy = this.convoy(id);
    this.requireItems(items);
    for (const item of new Set(items)) {
      if (!convoy.dependencies?.some((d) => d.depends_on_id === item && d.type === 'tracks')) {
        await this.beads.addDependency(id, item, 'tracks');
      }
    }
  }

  async remove(id: string, items: string[]): Promise<void> {
    const convoy = this.convoy(id);
    const untracked = items.filter(
      (item) => !convoy.dependencies?.some((d) => d.depends_on_id === item && d.type === 'tracks'),
    );
    if (untracked.length) {
      const message = `convoy ${id} does not track ${untracked.join(', ')}`;
      throw new Problem('validation-failed', `invalid: ${message}`, {
        errors: [{ location: 'body.items', message, value: untracked }],
      });
    }
    for (const item of new Set(items)) await this.beads.removeDependency(id, item, 'tracks');
  }

  check(id: string): ConvoyCheckResponse {
    const { progress } = this.get(id);
    return {
      convoy_id: id,
      total: progress.total,
      closed: progress.closed,
      complete: progress.total > 0 && progress.closed === progress.total,
    };
  }

  /** Closes the convoy (`convoy.closed` comes from the close itself); closing a closed one changes nothing. */
  async close(id: string): Promise<void> {
    this.convoy(id);
    await this.beads.close(id);
  }

  /** A convoy is deleted by closing it, as the reference does for convoys that are not workflows. */
  async delete(id: string): Promise<void> {
    await this.close(id);
  }

  private requireItems(items: string[]): void {
    const missing = items.filter((item) => !this.beads.find(item));
    if (missing.length) {
      const message = `no such bead: ${missing.join(', ')}`;
      throw new Problem('validation-failed', `invalid: ${message}`, {
        errors: [{ location: 'body.items', message, value: missing }],
      });
    }
  }
}
