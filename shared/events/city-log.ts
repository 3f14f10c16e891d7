import { cityPaths } from '../paths.js';
import { EventLog } from './event-log.js';

/** The event log of the city at `root` (`<root>/.ctl/events.jsonl`): this process's one instance of it. */
export function cityLog(root: string): EventLog {
  const paths = cityPaths(root);
  return EventLog.at(paths.events, paths.eventsLock);
}
