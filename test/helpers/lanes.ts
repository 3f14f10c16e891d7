/**
 * Runs `each` over `items`, `width` at a time: for a test that sends hundreds of independent requests (a walk of
 * the OpenAPI document), where one at a time only waits on round trips.
 */
export async function inLanes<T>(items: T[], width: number, each: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await each(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
}
