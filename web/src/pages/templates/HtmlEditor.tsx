import { type Completion, type CompletionContext, type CompletionResult } from '@codemirror/autocomplete';
import { html } from '@codemirror/lang-html';
import { Compartment, EditorState, type Extension, RangeSetBuilder } from '@codemirror/state';
import { Decoration, type DecorationSet, EditorView, ViewPlugin, type ViewUpdate } from '@codemirror/view';
import { basicSetup } from 'codemirror';
import { forwardRef, useEffect, useImperativeHandle, useRef } from 'react';
import { findTags, openTagAt, RESERVED_VARIABLES } from './variables';

export interface HtmlEditorHandle {
  /** Replaces the selection with `text` (or inserts it at the cursor) and focuses the editor. */
  insert(text: string): void;
}

interface Props {
  value: string;
  onChange: (value: string) => void;
  /** Known variable names: offered after `{{`; other names used in tags are underlined. */
  knownKeys: string[];
  label: string;
}

const unknownMark = Decoration.mark({ class: 'cm-unknown-variable', attributes: { title: 'Unknown variable: no contact has this data key' } });

/** Underlines tags whose key is neither a data key of the project nor a reserved variable. */
function unknownUnderline(known: Set<string>): Extension {
  const build = (view: EditorView): DecorationSet => {
    const b = new RangeSetBuilder<Decoration>();
    for (const t of findTags(view.state.doc.toString())) if (!known.has(t.key)) b.add(t.from, t.to, unknownMark);
    return b.finish();
  };
  return ViewPlugin.fromClass(
    class {
      decorations: DecorationSet;
      constructor(view: EditorView) {
        this.decorations = build(view);
      }
      update(u: ViewUpdate) {
        if (u.docChanged) this.decorations = build(u.view);
      }
    },
    { decorations: (v) => v.decorations },
  );
}

function variableCompletions(keys: string[]) {
  const options: Completion[] = keys.map((k) => ({ label: k, type: 'variable', detail: (RESERVED_VARIABLES as readonly string[]).includes(k) ? 'reserved' : 'data key' }));
  return (ctx: CompletionContext): CompletionResult | null => {
    const open = openTagAt(ctx.state.doc.toString(), ctx.pos);
    if (!open) return null;
    return { from: open.from, options, validFor: /^[^{}?]*$/ };
  };
}

const theme = EditorView.theme({
  '&': { height: '100%', fontSize: '13px', backgroundColor: 'var(--surface)', color: 'var(--fg)' },
  '.cm-scroller': { fontFamily: 'ui-monospace, SFMono-Regular, Menlo, monospace' },
  '.cm-gutters': { backgroundColor: 'var(--muted)', color: 'var(--fg-muted)', borderRight: '1px solid var(--border)' },
  '.cm-activeLine, .cm-activeLineGutter': { backgroundColor: 'color-mix(in srgb, var(--muted) 60%, transparent)' },
  '.cm-unknown-variable': { textDecoration: 'underline wavy var(--warn)', textUnderlineOffset: '3px' },
  '&.cm-focused': { outline: '2px solid var(--accent)', outlineOffset: '-2px' },
});

/** CodeMirror 6 with HTML highlighting, `{{variable}}` completion and unknown variables underlined. */
export const HtmlEditor = forwardRef<HtmlEditorHandle, Props>(function HtmlEditor({ value, onChange, knownKeys, label }, ref) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const onChangeRef = useRef(onChange);
  onChangeRef.current = onChange;
  const keysCompartment = useRef(new Compartment());

  const keysExtension = (keys: string[]): Extension => {
    const all = [...new Set([...RESERVED_VARIABLES, ...keys])];
    // One source object: autocompletion keeps a source's results by its identity.
    const data = [{ autocomplete: variableCompletions(all) }];
    return [EditorState.languageData.of(() => data), unknownUnderline(new Set(all))];
  };

  useEffect(() => {
    if (!host.current) return;
    const v = new EditorView({
      parent: host.current,
      state: EditorState.create({
        doc: value,
        extensions: [
          basicSetup,
          html(),
          theme,
          EditorView.lineWrapping,
          EditorView.contentAttributes.of({ 'aria-label': label }),
          keysCompartment.current.of(keysExtension(knownKeys)),
          EditorView.updateListener.of((u) => {
            if (u.docChanged) onChangeRef.current(u.state.doc.toString());
          }),
        ],
      }),
    });
    view.current = v;
    return () => {
      v.destroy();
      view.current = null;
    };
    // Created once; value and keys are synchronised by the effects below.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  useEffect(() => {
    view.current?.dispatch({ effects: keysCompartment.current.reconfigure(keysExtension(knownKeys)) });
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [knownKeys.join('\n')]);

  // A value set from outside (the template loaded, a reset) replaces the document.
  useEffect(() => {
    const v = view.current;
    if (v && v.state.doc.toString() !== value) v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: value } });
  }, [value]);

  useImperativeHandle(ref, () => ({
    insert(text: string) {
      const v = view.current;
      if (!v) return;
      const { from, to } = v.state.selection.main;
      v.dispatch({ changes: { from, to, insert: text }, selection: { anchor: from + text.length } });
      v.focus();
    },
  }));

  return <div ref={host} className="h-full min-h-[420px] overflow-hidden rounded-md border border-border" />;
});
