import { Problem } from '../../shared/http/problem.js';
import { IDEMPOTENCY_TTL_MS } from '../beads/bead-rules.js';
import { bodyHash } from '../beads/beads-service.js';

/** How many keys one operation remembers (the oldest go first). */
const CAP = 1024;

/**
 * `Idempotency-Key` for an operation whose effect is not a bead (adding a pack, registering an adapter): the
 * first answer under a key is kept for 30 minutes, as the bead store keeps its own; a repeat with the same body
 * gets it again (status and body), one with another body is a 422 `idempotency-mismatch`. In memory: a retry
 * comes within seconds, and a restarted controller has the effect itself on disk to answer from.
 */
export class IdempotentReplies<T> {
  private readonly replies = new Map<string, { hash: string; at: number; status: number; reply: T }>();

  /** Answers a repeat (its status and body), or runs `make` and remembers what it answered. */
  async run(
    key: string | undefined,
    body: unknown,
    make: () => Promise<{ status: number; reply: T }>,
  ): Promise<{ status: number; reply: T }> {
    if (key === undefined) return make();
    const hash = bodyHash(body);
    const earlier = this.replies.get(key);
    if (earlier && Date.now() - earlier.at < IDEMPOTENCY_TTL_MS) {
      if (earlier.hash !== hash) {
        throw new Problem(
          'idempotency-mismatch',
          'idempotency_mismatch: this Idempotency-Key was used with a different request body',
        );
      }
      return { status: earlier.status, reply: earlier.reply };
    }
    const made = await make();
    this.replies.set(key, { hash, at: Date.now(), ...made });
    if (this.replies.size > CAP) this.replies.delete(this.replies.keys().next().value!);
    return made;
  }
}
