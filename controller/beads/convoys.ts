import type { Bead } from '../../shared/dto/beads.js';
import type { ConvoyCheckResponse, ConvoyCreateInputBody, ConvoyGetResponse } from '../../shared/dto/convoys.js';
import { Problem } from '../../shared/http/problem.js';
import type { BeadsService, IdempotencyKey } from './beads-service.js';

/**
 * Convoys: `convoy` beads that track work through `tracks` dependency edges (convoy → item), which never
 * hold anything out of ready. Progress counts the tracked beads that are closed.
 */
export class ConvoysService {
  constructor(private readonly beads: BeadsService) {}

  /** The convoy with this id; 404 `convoy-not-found` for anything else. */
  convoy(id: string): Bead {
    const bead = this.beads.store.get(id);
    if (!bead || bead.issue_type !== 'convoy')
      throw new Problem('convoy-not-found', `not_found: convoy not found: ${id}`);
    return bead;
  }

  async create(input: ConvoyCreateInputBody, key?: IdempotencyKey): Promise<{ convoy: Bead; replayed: boolean }> {
    const items = [...new Set(input.items ?? [])];
    this.requireItems(items);
    // The convoy and its `tracks` edges are one write: a crash cannot leave a convoy missing its items.
    const { bead: convoy, replayed } = await this.beads.create(
      {
        title: input.title,
        type: 'convoy',
        metadata: input.rig ? { rig: input.rig } : {},
        dependencies: items.map((item) => ({ dependsOn: item, kind: 'tracks' as const })),
      },
      key,
    );
    if (!replayed)
      await this.beads.recordEvent({ type: 'convoy.created', actor: 'api', subject: convoy.id, payload: {} });
    return { convoy, replayed };
  }

  list(query: { limit: number; before?: string }): { items: Bead[]; total: number; more: boolean } {
    return this.beads.store.list({ type: 'convoy', limit: query.limit, before: query.before });
  }

  get(id: string): ConvoyGetResponse {
    const convoy = this.convoy(id);
    const children = this.tracked(convoy);
    return {
      convoy,
      children,
      progress: { total: children.length, closed: children.filter((c) => c.status === 'closed').length },
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

  /** Closes the convoy; closing a closed one changes nothing. */
  async close(id: string): Promise<void> {
    const convoy = this.convoy(id);
    if (convoy.status === 'closed') return;
    await this.beads.close(id);
    await this.beads.recordEvent({ type: 'convoy.closed', actor: 'api', subject: id, payload: {} });
  }

  async delete(id: string): Promise<void> {
    this.convoy(id);
    await this.beads.delete(id);
  }

  private tracked(convoy: Bead): Bead[] {
    return (convoy.dependencies ?? [])
      .filter((d) => d.type === 'tracks')
      .map((d) => this.beads.store.get(d.depends_on_id))
      .filter((b): b is Bead => b !== undefined);
  }

  private requireItems(items: string[]): void {
    const missing = items.filter((item) => !this.beads.store.get(item));
    if (missing.length) {
      const message = `no such bead: ${missing.join(', ')}`;
      throw new Problem('validation-failed', `invalid: ${message}`, {
        errors: [{ location: 'body.items', message, value: missing }],
      });
    }
  }
}
