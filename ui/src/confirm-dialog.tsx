import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

/**
 * A question before something that cannot be undone, as a modal `<dialog>`: the browser keeps focus inside it,
 * Escape cancels, and focus goes back where it was when it closes. Cancel has focus first, so Enter alone never
 * destroys. If the action fails, its words are shown in the dialog (an alert) and it stays open.
 */
export function ConfirmDialog(props: {
  title: string;
  children: ComponentChildren;
  /** The destructive button's label. */
  confirm: string;
  run: () => Promise<void>;
  onClose: () => void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string>();
  useEffect(() => {
    const d = dialog.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
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
      aria-labelledby="confirm-title"
      aria-describedby="confirm-body"
      onCancel={(e) => {
        e.preventDefault();
        if (!busy) props.onClose();
      }}
    >
      <h2 id="confirm-title">{props.title}</h2>
      <div id="confirm-body">{props.children}</div>
      {problem && (
        <p class="error" role="alert">
          {problem}
        </p>
      )}
      <div class="confirm-buttons">
        <button type="button" autoFocus disabled={busy} onClick={props.onClose}>
          Cancel
        </button>
        <button type="button" class="danger" disabled={busy} aria-busy={busy} onClick={() => void go()}>
          {props.confirm}
        </button>
      </div>
    </dialog>
  );
}
