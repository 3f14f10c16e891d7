import { useState } from 'preact/hooks';
import { api, CSRF, problemText, type Schemas } from '../api.js';
import { announce, ErrorNote } from '../components.js';

type Bead = Schemas['Bead'];

/** What a refused request said about each field (`body.title` → `title`), and about the rest. */
interface Refusal {
  fields: Record<string, string>;
  general?: string;
}

const EDITABLE = ['title', 'description', 'type', 'priority', 'labels'] as const;
type Field = (typeof EDITABLE)[number];

/** The field a problem's `location` names (`body.labels[0]` → `labels`), if the form has it. */
function fieldOf(location: string | undefined): Field | undefined {
  const name = location?.replace(/^body\./, '').replace(/[[.].*$/, '');
  if (name === 'remove_labels') return 'labels';
  return (EDITABLE as readonly string[]).includes(name ?? '') ? (name as Field) : undefined;
}

const labelsOf = (text: string) => [...new Set(text.split(',').map((l) => l.trim()))].filter((l) => l !== '');

/**
 * The bead's own fields, changed through `PATCH …/bead/{id}`: only what the person changed is sent (labels as
 * the ones to add and to remove). The API's validation errors are shown beside their fields, each tied to its
 * input (`aria-describedby`, `aria-invalid`), and focus goes to the first field at fault. Fields the person has
 * not touched follow the bead as it changes live.
 */
export function BeadEditor({ city, bead, onSaved }: { city: string; bead: Bead; onSaved: () => void }) {
  const initial = {
    title: bead.title,
    description: bead.description ?? '',
    type: bead.issue_type,
    priority: bead.priority === undefined ? '' : String(bead.priority),
    labels: (bead.labels ?? []).join(', '),
  };
  // Only what the person typed is theirs: the other fields follow the bead as it changes live.
  const [edits, setEdits] = useState<Partial<Record<Field, string>>>({});
  const values = { ...initial, ...edits };
  const [refusal, setRefusal] = useState<Refusal>({ fields: {} });
  const [busy, setBusy] = useState(false);
  const set = (field: Field) => (e: { currentTarget: { value: string } }) =>
    setEdits({ ...edits, [field]: e.currentTarget.value });

  const save = async (e: Event) => {
    e.preventDefault();
    const body: Schemas['BeadUpdateBody'] = {};
    if (values.title !== initial.title) body.title = values.title;
    if (values.description !== initial.description) body.description = values.description;
    if (values.type !== initial.type) body.type = values.type;
    if (values.priority !== initial.priority)
      body.priority = values.priority === '' ? undefined : Number(values.priority);
    const before = bead.labels ?? [];
    // A blank label among others is the person's mistake to see, not something to drop quietly.
    const typed = values.labels.split(',').map((l) => l.trim());
    const after = labelsOf(values.labels);
    if (typed.length > 1 && typed.some((l) => l === '')) {
      setRefusal({ fields: { labels: 'labels must not be empty (remove the extra comma)' } });
      return;
    }
    const added = after.filter((l) => !before.includes(l));
    const removed = before.filter((l) => !after.includes(l));
    if (added.length) body.labels = added;
    if (removed.length) body.remove_labels = removed;
    if (Object.keys(body).length === 0) {
      setRefusal({ fields: {}, general: 'Nothing changed.' });
      return;
    }
    setBusy(true);
    try {
      const { error, response } = await api.PATCH('/v0/city/{cityName}/bead/{id}', {
        params: { path: { cityName: city, id: bead.id }, header: CSRF },
        body,
      });
      if (response.ok) {
        setRefusal({ fields: {} });
        setEdits({});
        announce(`Saved ${bead.id}`);
        onSaved();
        return;
      }
      const fields: Record<string, string> = {};
      const rest: string[] = [];
      for (const detail of error?.errors ?? []) {
        const field = fieldOf(detail.location);
        if (field) fields[field] ??= detail.message ?? 'invalid';
        else rest.push(`${detail.location}: ${detail.message}`);
      }
      const general = Object.keys(fields).length && !rest.length ? undefined : problemText(error, response);
      setRefusal({ fields, general });
      const first = EDITABLE.find((f) => fields[f]);
      if (first) document.getElementById(`edit-${first}`)?.focus();
    } catch (err) {
      setRefusal({ fields: {}, general: `cannot reach the supervisor: ${(err as Error).message}` });
    } finally {
      setBusy(false);
    }
  };

  const control = (field: Field, label: string, input: (props: Record<string, unknown>) => preact.JSX.Element) => {
    const message = refusal.fields[field];
    const id = `edit-${field}`;
    return (
      <div class="field">
        <label for={id}>{label}</label>
        {input({
          id,
          value: values[field],
          onInput: set(field),
          'aria-invalid': message ? 'true' : undefined,
          'aria-describedby': message ? `${id}-error` : undefined,
        })}
        {message && (
          <span id={`${id}-error`} class="field-error">
            {message}
          </span>
        )}
      </div>
    );
  };

  return (
    <form class="edit-form" aria-labelledby="edit-h" onSubmit={(e) => void save(e)} noValidate>
      <h2 id="edit-h">Edit</h2>
      {control('title', 'Title', (p) => (
        <input {...p} />
      ))}
      {control('description', 'Description', (p) => (
        <textarea rows={4} {...p} />
      ))}
      {control('type', 'Type', (p) => (
        <input list="bead-types" {...p} />
      ))}
      <datalist id="bead-types">
        {['task', 'bug', 'feature', 'chore', 'epic', 'decision'].map((t) => (
          <option key={t} value={t} />
        ))}
      </datalist>
      {control('priority', 'Priority', (p) => (
        <select {...p}>
          {initial.priority === '' && <option value="">Not set</option>}
          {['0', '1', '2', '3', '4'].map((n) => (
            <option key={n} value={n}>
              {n === '0' ? '0 (highest)' : n === '4' ? '4 (lowest)' : n}
            </option>
          ))}
        </select>
      ))}
      {control('labels', 'Labels (comma-separated)', (p) => (
        <input {...p} />
      ))}
      <ErrorNote error={refusal.general} />
      <button type="submit" class="primary" disabled={busy} aria-busy={busy}>
        Save changes
      </button>
    </form>
  );
}
