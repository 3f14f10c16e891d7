import type { Bead } from '../../shared/dto/beads.js';
import type { BeadsService } from '../beads/beads-service.js';
import * as K from './molecule-keys.js';

/** The most of a failed check's output kept on its bead. */
export const REASON_MAX = 2000;

/** The tail of a long reason (a command's output ends with what went wrong). */
export function clip(text: string, max = REASON_MAX): string {
  return text.length > max ? `…${text.slice(-max)}` : text;
}

/** Closes a node the controller closes, with how it ended and why. */
export async function closeNode(beads: BeadsService, bead: Bead, outcome: string, reason?: string): Promise<void> {
  await beads.update(bead.id, {
    status: 'closed',
    metadata: { [K.OUTCOME]: outcome, ...(reason ? { [K.OUTCOME_REASON]: clip(reason) } : {}) },
  });
}
