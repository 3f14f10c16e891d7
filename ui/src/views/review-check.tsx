import type { Schemas } from '../api.js';
import { Time } from '../components.js';
import { checkDuration, checkOutcome, queueWords } from '../review-rows.js';

type Detail = Schemas['ReviewDetail'];

/** An approved review's place and step in its rig's merge queue, announced as it changes (review.* events). */
export function QueueStatus({ review: r }: { review: Detail }) {
  if (r.state !== 'approved') return null;
  return (
    <p class="queue-status" role="status">
      {queueWords(r.queue_position, r.queue_step)}
    </p>
  );
}

/**
 * The last run of the city's `[review] check`: its outcome, length, command and commit; when it did not pass, its
 * output (the detail's last 64 KiB) in a labelled, scrollable, focusable region so a keyboard can scroll it.
 */
export function CheckResult({ review: r }: { review: Detail }) {
  const check = r.check;
  if (!check) return null;
  const output = r.check_output ?? '';
  return (
    <section aria-labelledby="check-h">
      <h2 id="check-h">Check</h2>
      <p>
        <span class={check.passed ? 'badge badge-check-passed' : 'badge badge-check-failed'}>
          {check.passed ? 'Check passed' : `Check ${checkOutcome(check)}`}
        </span>{' '}
        after {checkDuration(check.duration_ms)}, <Time iso={check.at} />, on <code>{check.commit.slice(0, 12)}</code>:{' '}
        <code>{check.command}</code>
      </p>
      {!check.passed && output !== '' && (
        <pre class="check-output" role="region" aria-label="Check output" tabIndex={0}>
          {output}
        </pre>
      )}
      {!check.passed && output === '' && <p class="muted">It wrote nothing.</p>}
    </section>
  );
}
