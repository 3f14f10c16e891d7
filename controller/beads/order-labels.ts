/** The label on every order firing's tracking bead (one of the bookkeeping labels, never ready work). */
export const ORDER_TRACKING = 'order-tracking';

/** The label on every bead of an order's firings (tracking beads and runs): the open-work gate looks for it. */
export function runLabel(scopedName: string): string {
  return `order-run:${scopedName}`;
}
