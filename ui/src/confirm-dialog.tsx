import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef, useState } from 'preact/hooks';

/**
 * A question before something that cannot be undone, as a modal `<dialog>`: the browser keeps focus inside it,
 * Escape cancels, and focus goes back where it was when it closes. Cancel has focus first, so Enter alone never
 * destroys. If the action fails, its words are shown in the dialog (an alert) and it stays open: the person sees
 * the refusal where they asked, and chooses again. Every confirmation on the dashboard is this one (never
 * `window.confirm`, which blocks the page and cannot be styled or named).
 */
export function ConfirmDialog(props: {
  title: string;
  children: ComponentChildren;
  /** The destructive button's label. */
  confirm: string;
  /** The label of the button that leaves things as they are ("Keep running" where "Cancel" would be ambiguous). */
  keep?: string;
  run: () => Promise<void>;
  onClose: () => void;
  /** Where focus goes back when it closes (the button that opened it); else what had focus when it was asked for. */
  returnFocusTo?: { current: HTMLElement | null };
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string>();
  // Ids of its own: a view may hold several confirming buttons, and each dialog names itself by its title.
  const id = useId();
  const returnFocusTo = props.returnFocusTo;
  // The element that had focus when the dialog was asked for, taken at the first render: by the time an effect
  // runs, the browser may already have moved focus to the dialog's autofocus button, which leaves with it.
  const [opener] = useState(() => (document.activeElement instanceof HTMLElement ? document.activeElement : undefined));
  useEffect(() => {
    const d = dialog.current;
    // The dialog leaves the document with its owner's state, and then the browser does not give focus back (it
    // was left on the page's body): so the opener gets it back here.
    if (d && !d.open) d.showModal();
    return () => {
      d?.close();
      const lost =
        !document.activeElement || document.activeElement === document.body || d?.contains(document.activeElement);
      const back = returnFocusTo?.current ?? opener;
      if (lost && back?.isConnected) back.focus();
    };
  }, []);
  const go = async () => {
    setBusy(true);
    setProblem(undefined);
    try {
      await props.run();
      props.onClose();
    } catch (err) {
      setProblem((err as Error).message);
      setBusy(false);
    }
  };
  return (
    <dialog
      ref={dialog}
      class="confirm"
      aria-labelledby={`${id}-title`}
      aria-describedby={`${id}-body`}
      onCancel={(e) => {
        e.preventDefault();
        if (!busy) props.onClose();
      }}
    >
      <h2 id={`${id}-title`}>{props.title}</h2>
      <div id={`${id}-body`}>{props.children}</div>
      {problem && (
        <p class="error" role="alert">
          {problem}
        </p>
      )}
      <div class="confirm-buttons">
        <button type="button" autoFocus disabled={busy} onClick={props.onClose}>
          {props.keep ?? 'Cancel'}
        </button>
        <button type="button" class="danger" disabled={busy} aria-busy={busy} onClick={() => void go()}>
          {props.confirm}
        </button>
      </div>
    </dialog>
  );
}
