import {
  elementScroll,
  observeElementOffset,
  observeElementRect,
  Virtualizer,
  type VirtualItem,
} from '@tanstack/virtual-core';
import { useLayoutEffect, useReducer, useRef, useState } from 'preact/hooks';

export type { VirtualItem };

/**
 * A list of `count` rows of `rowHeight` pixels in a scrolling element, of which only the rows in view (and
 * `overscan` more each side) are drawn: TanStack's framework-agnostic virtualiser driven as its React adapter
 * drives it (mount, update, re-render on change), so 10,000 rows cost what 30 do.
 */
export function useVirtualRows(count: number, rowHeight: number, overscan = 8) {
  const scrollRef = useRef<HTMLDivElement>(null);
  const [, rerender] = useReducer((n: number) => n + 1, 0);
  const [virtualizer] = useState(
    () =>
      new Virtualizer<HTMLDivElement, HTMLElement>({
        count,
        getScrollElement: () => scrollRef.current,
        estimateSize: () => rowHeight,
        scrollToFn: elementScroll,
        observeElementRect,
        observeElementOffset,
        overscan,
        // Before the element is measured (the first render), draw a screenful rather than nothing.
        initialRect: { width: 0, height: 800 },
        onChange: () => rerender(0),
      }),
  );
  virtualizer.setOptions({ ...virtualizer.options, count, estimateSize: () => rowHeight, overscan });
  useLayoutEffect(() => virtualizer._didMount(), []);
  useLayoutEffect(() => virtualizer._willUpdate());
  return { scrollRef, rows: virtualizer.getVirtualItems(), totalHeight: virtualizer.getTotalSize() };
}
